import { parseArgs, configFrom, storeOptions, UsageError } from './args.js';
import { withStore } from './with-store.js';

export const keysHelp = `gantry keys create --account NAME --scope read|write [--name LABEL] [--exempt]
                                prints the new key (shown only once)
gantry keys list [--account NAME]
gantry keys revoke ID`;

export async function keys(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      ...storeOptions,
      account: { type: 'string' },
      scope: { type: 'string' },
      name: { type: 'string' },
      exempt: { type: 'boolean' },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) return void console.log(keysHelp);
  const [sub, id] = positionals;
  await withStore(configFrom(values), async ({ accounts }) => {
    if (sub === 'create') {
      if (!values.account) throw new UsageError('gantry keys create needs --account NAME');
      const scope = values.scope ?? 'write';
      if (scope !== 'read' && scope !== 'write') throw new UsageError('--scope must be read or write');
      const account = await accounts.accountByName(values.account);
      const created = await accounts.createKey(account.id, {
        scope,
        ...(values.name ? { name: values.name } : {}),
        rateLimitExempt: values.exempt === true,
      });
      console.log(created.key);
    } else if (sub === 'list') {
      const accountId = values.account ? (await accounts.accountByName(values.account)).id : undefined;
      const names = new Map((await accounts.store.listAccounts()).map((a) => [a.id, a.name]));
      for (const k of await accounts.store.listKeys(accountId)) {
        const state = k.revokedAt ? 'revoked' : 'active';
        console.log(
          [
            k.id,
            names.get(k.accountId) ?? k.accountId,
            k.scope,
            `${k.prefix}…`,
            state,
            k.rateLimitExempt ? 'exempt' : '',
            k.name,
          ].join('\t'),
        );
      }
    } else if (sub === 'revoke') {
      if (!id) throw new UsageError('usage: gantry keys revoke ID');
      await accounts.revokeKey(id);
      console.log(`revoked ${id}`);
    } else throw new UsageError(keysHelp);
  });
}
