import type { FastifyRequest } from 'fastify';
import type { TypedApp } from '../type-provider.js';
import { Type } from '@sinclair/typebox';
import type { Services } from '../../services.js';
import { principalOf } from '../plugins/auth.js';
import { errorResponses } from '../schemas.js';
import { notFound } from '../../domain/errors.js';

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
  if (Array.isArray(request.body)) request.body = { keys: request.body as unknown[] };
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

export function accountRoutes(app: TypedApp, { accounts }: Services): void {
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
      const account = await accounts.store.getAccount(principal.accountId);
      if (!account) throw notFound('account', principal.accountId);
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
}
