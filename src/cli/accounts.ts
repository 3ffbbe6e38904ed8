import { parseArgs, configFrom, storeOptions, UsageError } from './args.js';
import { accountIsolationOf, MultiAccountRefused, multiAccountCreateRefusal } from '../runtime/account-isolation.js';
import { configuredRuntime } from '../runtime/registry.js';
import { withStore } from './with-store.js';

export const accountsHelp = `gantry accounts create NAME   create an account
gantry accounts list          list accounts`;

export async function accounts(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: storeOptions,
    allowPositionals: true,
    strict: true,
  });
  if (values.help) return void console.log(accountsHelp);
  const [sub, name] = positionals;
  const config = configFrom(values);
  await withStore(config, async ({ accounts }) => {
    if (sub === 'create') {
      if (!name) throw new UsageError('usage: gantry accounts create NAME');
      const refusal = multiAccountCreateRefusal(
        await accounts.store.countAccounts(),
        accountIsolationOf(configuredRuntime(config).isolation(config), config),
      );
      if (refusal) throw new MultiAccountRefused(refusal);
      const account = await accounts.createAccount(name);
      console.log(`created account ${account.name} (${account.id})`);
    } else if (sub === 'list') {
      for (const a of await accounts.store.listAccounts())
        console.log(`${a.id}\t${a.name}\t${new Date(a.createdAt).toISOString()}`);
    } else throw new UsageError(accountsHelp);
  });
}
