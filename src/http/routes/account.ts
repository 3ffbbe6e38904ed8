import type { FastifyRequest } from 'fastify';
import type { TypedApp } from '../type-provider.js';
import { Type } from '@sinclair/typebox';
import type { Services } from '../../services.js';
import { principalOf } from '../plugins/auth.js';
import { errorResponses } from '../schemas.js';

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

export function accountRoutes(app: TypedApp, { accounts }: Services): void {
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
