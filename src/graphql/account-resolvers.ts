import { validationFailed } from '../domain/errors.js';
import type { Registry } from '../domain/registry.js';
import type { GraphqlContext } from './context.js';
import { toGqlPod } from './pod-resolvers.js';
import type { ResolverMap } from './schema.js';
import { toGqlTemplate } from './template-resolvers.js';
import { toGqlVolume } from './volume-resolvers.js';

/** `myself` resolves to the caller's account id; each field reads what it needs. */
interface Me {
  id: string;
}

/** Only id and name: registry usernames and passwords never leave the service. */
const registryView = ({ id, name }: Registry) => ({ id, name });

/** `pubKey` is the account's SSH keys, one per line; runpodctl separates them by blank lines. */
const splitKeys = (pubKey: string): string[] =>
  pubKey
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l.length > 0);

export const accountResolvers: ResolverMap<GraphqlContext> = {
  Query: {
    myself: (_root, _args, { principal }: GraphqlContext): Me => ({ id: principal.accountId }),
  },
  Mutation: {
    updateUserSettings: async (
      _root,
      args: { input?: { pubKey?: string | null } | null },
      { services, principal }: GraphqlContext,
    ): Promise<Me> => {
      const pubKey = args.input?.pubKey;
      if (pubKey !== undefined && pubKey !== null)
        await services.accounts.putSshKeys(principal.accountId, splitKeys(pubKey));
      return { id: principal.accountId };
    },
    saveRegistryAuth: async (
      _root,
      args: { input?: { name?: string | null; username?: string | null; password?: string | null } | null },
      { services, principal }: GraphqlContext,
    ) => {
      const { name, username, password } = args.input ?? {};
      const missing = [
        ...(name ? [] : ['name: is required']),
        ...(username ? [] : ['username: is required']),
        ...(password ? [] : ['password: is required']),
      ];
      if (missing.length > 0) throw validationFailed(missing);
      return registryView(
        await services.registries.create(principal.accountId, {
          name: name!,
          username: username!,
          password: password!,
        }),
      );
    },
    updateRegistryAuth: async (
      _root,
      args: { input?: { id?: string | null; username?: string | null; password?: string | null } | null },
      { services, principal }: GraphqlContext,
    ) => {
      const { id, username, password } = args.input ?? {};
      if (!id) throw validationFailed(['id: is required']);
      // The service answers 404 for a credential the caller does not have before judging the rest.
      return registryView(
        await services.registries.update(principal.accountId, id, {
          username: username ?? '',
          password: password ?? '',
        }),
      );
    },
    deleteRegistryAuth: async (_root, args: { registryAuthId: string }, { services, principal }: GraphqlContext) => {
      await services.registries.delete(principal.accountId, args.registryAuthId);
      return null;
    },
  },
  User: {
    authId: (me: Me) => `gantry|${me.id}`,
    email: () => null,
    pubKey: async (me: Me, _args, { services }: GraphqlContext) =>
      (await services.accounts.getSshKeys(me.id)).join('\n'),
    endpoints: (me: Me, _args, { services }: GraphqlContext) => services.endpoints.list(me.id),
    serverlessDiscount: () => null,
    networkVolumes: async (me: Me, _args, { services }: GraphqlContext) =>
      (await services.volumes.list(me.id)).map(toGqlVolume),
    pods: async (me: Me, _args, ctx: GraphqlContext) =>
      (await ctx.services.pods.list(me.id)).map((p) => toGqlPod(p, ctx)),
    podTemplates: async (me: Me, _args, { services }: GraphqlContext) =>
      (await services.templates.list(me.id)).map((t) => toGqlTemplate(t, me.id)),
    containerRegistryCreds: async (me: Me, _args, { services }: GraphqlContext) =>
      (await services.registries.list(me.id)).map(registryView),
    clientBalance: () => 0,
    currentSpendPerHr: async (me: Me, _args, { services }: GraphqlContext) =>
      (await services.pods.list(me.id)).reduce((sum, p) => sum + p.cost, 0),
    spendLimit: () => null,
    notifyPodsStale: () => false,
    notifyPodsGeneral: () => false,
    notifyLowBalance: () => false,
  },
};
