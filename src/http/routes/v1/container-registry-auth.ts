/** REST v1 container registry credentials (`/v1/containerregistryauth`) over RegistriesService. */
import type { TypedApp } from '../../type-provider.js';
import { Type, type Static } from '@sinclair/typebox';
import type { Registry } from '../../../domain/registry.js';
import type { TransportServices } from '../../../transport/services.js';
import { principalOf } from '../../plugins/auth.js';
import { closed, Deleted, errorResponses, IdParam } from './common.js';

const tags = ['container registry auth'];
const Params = IdParam('containerRegistryAuthId');
type Params = Static<typeof Params>;

const CreateBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 191 }),
    username: Type.String({ minLength: 1, maxLength: 1024 }),
    password: Type.String({ minLength: 1, maxLength: 16384, description: 'stored encrypted; never returned' }),
  },
  closed,
);
/** Write-only secrets: the answer names the credential only. */
const AuthSchema = Type.Object({ id: Type.String(), name: Type.String() });
const view = ({ id, name }: Registry): Static<typeof AuthSchema> => ({ id, name });

export function containerRegistryAuthV1Routes(app: TypedApp, { registries }: TransportServices): void {
  app.post(
    '/containerregistryauth',
    {
      schema: {
        tags,
        operationId: 'CreateContainerRegistryAuth',
        summary: 'Store a container registry credential',
        body: CreateBody,
        response: { 200: AuthSchema, ...errorResponses },
      },
    },
    async (request) => view(await registries.create(principalOf(request).accountId, request.body)),
  );

  app.get(
    '/containerregistryauth',
    {
      schema: {
        tags,
        operationId: 'ListContainerRegistryAuths',
        summary: 'List your registry credentials (a bare array, without secrets)',
        response: { 200: Type.Array(AuthSchema), ...errorResponses },
      },
    },
    async (request) => (await registries.list(principalOf(request).accountId)).map(view),
  );

  app.get(
    '/containerregistryauth/:containerRegistryAuthId',
    {
      schema: {
        tags,
        operationId: 'GetContainerRegistryAuth',
        summary: 'Read a registry credential (without its secrets)',
        params: Params,
        response: { 200: AuthSchema, ...errorResponses },
      },
    },
    async (request) =>
      view(await registries.get(principalOf(request).accountId, request.params.containerRegistryAuthId)),
  );

  app.delete(
    '/containerregistryauth/:containerRegistryAuthId',
    {
      schema: {
        tags,
        operationId: 'DeleteContainerRegistryAuth',
        summary: 'Delete a registry credential',
        params: Params,
        response: { 204: Deleted, ...errorResponses },
      },
    },
    async (request, reply) => {
      await registries.delete(principalOf(request).accountId, request.params.containerRegistryAuthId);
      return reply.code(204).send();
    },
  );
}
