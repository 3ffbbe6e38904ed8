import type { TypedApp } from '../type-provider.js';
import { Type } from '@sinclair/typebox';
import type { Services } from '../../services.js';
import { principalOf } from '../plugins/auth.js';
import { errorResponses } from '../schemas.js';

const SshKeys = Type.Array(Type.String({ maxLength: 16384 }), { maxItems: 100 });

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
    async (request) => accounts.getSshKeys(principalOf(request).accountId),
  );
  app.put(
    '/v2/account/ssh-keys',
    {
      schema: {
        tags: ['account'],
        summary: 'Replace the SSH public keys of the account (full replacement)',
        description: 'Each entry must be one authorized_keys line: `<type> <base64> [comment]`.',
        body: SshKeys,
        response: { 200: SshKeys, ...errorResponses },
      },
    },
    async (request) => accounts.putSshKeys(principalOf(request).accountId, request.body),
  );
}
