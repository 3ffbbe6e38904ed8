import type { FastifyRequest } from 'fastify';
import type { TypedApp } from '../type-provider.js';
import { Type, type Static } from '@sinclair/typebox';
import type { TransportServices } from '../../transport/services.js';
import type { ApiKeyView } from '../../accounts/accounts-service.js';
import { KEY_NAME_MAX } from '../../accounts/api-keys.js';
import { principalOf } from '../plugins/auth.js';
import { Deleted, errorResponses, StringEnum } from '../schemas.js';
import { ID_PATTERN } from '../../domain/ids.js';

const KeyList = Type.Array(
  Type.String({
    maxLength: 16384,
    pattern: '^(ssh|ecdsa|sk)-[^\\s]+ [^\\s]+([ \\t][^\\n\\r]*)?$',
    description: 'one authorized_keys line: `<type> <base64-key> [comment]`',
  }),
  { maxItems: 100 },
);
/** The account's registered SSH public keys (SshKeys). */
const SshKeys = Type.Object({ keys: Type.Array(Type.String()) });
/** A full replacement of the keys (UpdateSshKeysRequest); `[]` removes them all. */
const UpdateSshKeysRequest = Type.Object({ keys: KeyList }, { additionalProperties: false });

/** The documented alias: a bare array of keys, as this route took before `{ keys }`. */
async function bareArrayAsKeys(request: FastifyRequest): Promise<void> {
  if (Array.isArray(request.body)) request.body = { keys: request.body };
}

/** Who the presented key is (Gantry extension): what a client such as the console needs to show. */
const AccountView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  key: Type.Object({
    id: Type.String(),
    scope: Type.Union([Type.Literal('read'), Type.Literal('write')], {
      description: '"read" keys may call GET and HEAD only; "write" keys everything their account owns',
    }),
  }),
});

const KeyScope = StringEnum(['read', 'write'] as const, {
  description: '"read" keys may call GET and HEAD only; "write" keys everything their account owns',
});

/** One of the account's API keys as listed (Gantry extension): never its secret, never its hash. */
const ApiKeySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scope: KeyScope,
  prefix: Type.String({ description: 'the first 8 characters of the key, to recognise it; never the rest' }),
  createdAt: Type.String({ format: 'date-time' }),
  lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description:
      'when the key was last used, to within a minute (uses are written in batches; another replica’s within its next batch); null if never',
  }),
  current: Type.Boolean({ description: 'true for the key that made this request' }),
});
const ApiKeyList = Type.Object({ apiKeys: Type.Array(ApiKeySchema) });
/** The create answer: the listed fields and, this once, the key itself. */
const CreatedApiKey = Type.Object({
  ...ApiKeySchema.properties,
  key: Type.String({ description: 'the new API key: answered this once, stored only as a hash, never shown again' }),
});
const CreateApiKeyRequest = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: KEY_NAME_MAX,
      description: `1-${KEY_NAME_MAX} characters, without control or format characters`,
    }),
    scope: Type.Optional(
      StringEnum(['read', 'write'] as const, {
        description: '"read" (the default) or "write"; a key is never rate-limit exempt when made here',
      }),
    ),
  },
  { additionalProperties: false },
);
const KeyIdParams = Type.Object({ keyId: Type.String({ pattern: ID_PATTERN }) }, { additionalProperties: false });

const keyView = (key: ApiKeyView, callerKeyId: string): Static<typeof ApiKeySchema> => ({
  id: key.id,
  name: key.name,
  // the store lists read and write keys only (workers' keys are never listed here)
  scope: key.scope === 'read' ? 'read' : 'write',
  prefix: key.prefix,
  createdAt: new Date(key.createdAt).toISOString(),
  lastUsedAt: key.lastUsedAt === null ? null : new Date(key.lastUsedAt).toISOString(),
  current: key.id === callerKeyId,
});

export function accountRoutes(app: TypedApp, { accounts }: TransportServices): void {
  app.get(
    '/v2/account',
    {
      schema: {
        tags: ['account'],
        summary: 'The account of the presented API key, and that key’s id and scope',
        description:
          'Gantry extension. Lets a client (the web console) show what the key may do before it tries: a `read` key is refused every write with 403.',
        response: { 200: AccountView, ...errorResponses },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const account = await accounts.getAccount(principal.accountId);
      // worker keys never get here (auth.ts admits them to their worker protocol only)
      const scope: 'read' | 'write' = principal.scope === 'read' ? 'read' : 'write';
      return { id: account.id, name: account.name, key: { id: principal.keyId, scope } };
    },
  );
  app.get(
    '/v2/account/ssh-keys',
    {
      schema: {
        tags: ['account'],
        summary: 'List the SSH public keys registered for the account',
        response: { 200: SshKeys, ...errorResponses },
      },
    },
    async (request) => ({ keys: await accounts.getSshKeys(principalOf(request).accountId) }),
  );
  app.put(
    '/v2/account/ssh-keys',
    {
      preValidation: bareArrayAsKeys,
      schema: {
        tags: ['account'],
        summary: 'Replace the SSH public keys of the account (full replacement)',
        description:
          'Each entry must be one authorized_keys line: `<type> <base64> [comment]`. A bare array of keys (the older body) is accepted as `{ keys: [...] }`.',
        body: UpdateSshKeysRequest,
        response: { 200: SshKeys, ...errorResponses },
      },
    },
    async (request) => ({ keys: await accounts.putSshKeys(principalOf(request).accountId, request.body.keys) }),
  );
  app.get(
    '/v2/account/api-keys',
    {
      schema: {
        tags: ['account'],
        summary: 'List the account’s live API keys (never their secrets)',
        description:
          'Gantry extension. Read and write keys, oldest first, with `current: true` on the calling key. Workers’ keys (made by the platform for serverless workers) are not listed. Any key of the account may list.',
        response: { 200: ApiKeyList, ...errorResponses },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const keys = await accounts.listAccountKeys(principal.accountId);
      return { apiKeys: keys.map((k) => keyView(k, principal.keyId)) };
    },
  );
  app.post(
    '/v2/account/api-keys',
    {
      schema: {
        tags: ['account'],
        summary: 'Create an API key for the account; the answer holds the key, this once',
        description:
          'Gantry extension. Needs a write key. The new key is `read` unless `write` is asked for, never rate-limit exempt, and stored only as a hash: the `key` field of this 201 answer is the only time it is shown. Refused with 400 RESOURCE_QUOTA_EXCEEDED when the account holds `quotas.apiKeys` live keys.',
        body: CreateApiKeyRequest,
        response: { 201: CreatedApiKey, ...errorResponses },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const created = await accounts.createAccountKey(principal.accountId, {
        name: request.body.name,
        scope: request.body.scope ?? 'read',
      });
      // the secret must not be kept by a cache between here and the client
      void reply.header('cache-control', 'no-store');
      return reply.code(201).send({ ...keyView(created.record, principal.keyId), key: created.key });
    },
  );
  app.delete(
    '/v2/account/api-keys/:keyId',
    {
      schema: {
        tags: ['account'],
        summary: 'Revoke one of the account’s API keys',
        description:
          'Gantry extension. Needs a write key. Answers 204; the key is refused (401) from the next request on. Revoking the calling key itself is allowed: this answer is its last. A key of another account, a worker’s key, a revoked or an unknown id all answer the same 404.',
        params: KeyIdParams,
        response: { 204: Deleted, ...errorResponses },
      },
    },
    async (request, reply) => {
      await accounts.revokeAccountKey(principalOf(request).accountId, request.params.keyId);
      return reply.code(204).send();
    },
  );
}
