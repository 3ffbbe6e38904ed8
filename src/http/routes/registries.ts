import type { TypedApp } from '../type-provider.js';
import { Type, type Static } from '@sinclair/typebox';
import type { Registry } from '../../domain/registry.js';
import type { Services } from '../../services.js';
import { principalOf } from '../plugins/auth.js';
import { Deleted, errorResponses, IdParams } from '../schemas.js';

const CreateRegistryRequest = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 191 }),
    username: Type.String({ minLength: 1, maxLength: 1024 }),
    password: Type.String({
      minLength: 1,
      maxLength: 16384,
      description: 'a password or access token; stored encrypted and never returned',
    }),
  },
  { additionalProperties: false },
);

/** Credentials are write-only: the answer names the credential, never its username or password. */
const RegistrySchema = Type.Object({ id: Type.String(), name: Type.String() });
const RegistryList = Type.Object({ registries: Type.Array(RegistrySchema) });

const view = ({ id, name }: Registry): Static<typeof RegistrySchema> => ({ id, name });
const tags = ['registries'];

export function registryRoutes(app: TypedApp, { registries }: Services): void {
  app.post(
    '/v2/registries',
    {
      schema: {
        tags,
        summary: 'Store a container registry credential',
        description: 'Pods and templates name it as `registry` / `containerRegistryAuthId` to pull private images.',
        body: CreateRegistryRequest,
        response: { 201: RegistrySchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const created = await registries.create(principalOf(request).accountId, request.body);
      return reply.code(201).send(view(created));
    },
  );

  app.get(
    '/v2/registries',
    { schema: { tags, summary: 'List your registry credentials', response: { 200: RegistryList, ...errorResponses } } },
    async (request) => ({ registries: (await registries.list(principalOf(request).accountId)).map(view) }),
  );

  app.get(
    '/v2/registries/:id',
    {
      schema: {
        tags,
        summary: 'Get a registry credential (without its secrets)',
        params: IdParams,
        response: { 200: RegistrySchema, ...errorResponses },
      },
    },
    async (request) => view(await registries.get(principalOf(request).accountId, request.params.id)),
  );

  app.delete(
    '/v2/registries/:id',
    {
      schema: {
        tags,
        summary: 'Delete a registry credential',
        description:
          'Refused with 400 REGISTRY_IN_USE while a pod that is not terminated or one of your templates uses it.',
        params: IdParams,
        response: { 204: Deleted, ...errorResponses },
      },
    },
    async (request, reply) => {
      await registries.delete(principalOf(request).accountId, request.params.id);
      return reply.code(204).send();
    },
  );
}
