import type { TypedApp } from '../type-provider.js';
import { Type, type Static } from '@sinclair/typebox';
import type { Registry } from '../../domain/registry.js';
import type { RegistryDelegation } from '../../domain/registry-delegation.js';
import { dockerRegistryUri } from '../../registries/registries-service.js';
import type { TransportServices } from '../../transport/services.js';
import { principalOf } from '../plugins/auth.js';
import { Deleted, errorResponses, IdParams, Nullable } from '../schemas.js';

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

const CreateDelegationRequest = Type.Object(
  {
    resource: Type.String({
      minLength: 1,
      maxLength: 512,
      description:
        'ECR resource ARN, `arn:aws:ecr:<region>:<account>:repository/<name>`; `:<tag>` after the name sets `tag` (default `latest`)',
    }),
    name: Type.Optional(Nullable(Type.String({ maxLength: 191, description: 'optional name for the delegation' }))),
  },
  { additionalProperties: false },
);

const EcrDelegation = Type.Object({
  id: Type.String(),
  name: Nullable(Type.String()),
  delegatorUserId: Type.String({ description: 'the account that registered it' }),
  awsUser: Type.String({ description: 'the AWS account id that owns the repository' }),
  repository: Type.String(),
  tag: Type.String({ description: 'the tag the ARN names after the repository, else `latest`' }),
  awsRegion: Type.String(),
  dockerRegistryUri: Type.String({ description: '`<account>.dkr.ecr.<region>.amazonaws.com`' }),
  createdAt: Type.String({ format: 'date-time' }),
});

const delegationView = (d: RegistryDelegation): Static<typeof EcrDelegation> => ({
  id: d.id,
  name: d.name,
  delegatorUserId: d.accountId,
  awsUser: d.awsAccount,
  repository: d.repository,
  tag: d.tag,
  awsRegion: d.awsRegion,
  dockerRegistryUri: dockerRegistryUri(d),
  createdAt: new Date(d.createdAt).toISOString(),
});

export function registryRoutes(app: TypedApp, { registries }: TransportServices): void {
  // Static paths: find-my-way prefers them to `/v2/registries/:id`, so `delegations` is never read as an id.
  app.get(
    '/v2/registries/delegations',
    {
      schema: {
        tags,
        summary: 'List your ECR delegations',
        response: { 200: Type.Object({ delegations: Type.Array(EcrDelegation) }), ...errorResponses },
      },
    },
    async (request) => ({
      delegations: (await registries.listDelegations(principalOf(request).accountId)).map(delegationView),
    }),
  );

  app.post(
    '/v2/registries/delegations',
    {
      schema: {
        tags,
        summary: 'Register an ECR delegation',
        description:
          'Gantry keeps the delegation as a record of the account and calls no AWS API: pulls from the repository use the engine’s own credentials.',
        body: CreateDelegationRequest,
        response: { 201: EcrDelegation, ...errorResponses },
      },
    },
    async (request, reply) => {
      const created = await registries.createDelegation(principalOf(request).accountId, request.body);
      return reply.code(201).send(delegationView(created));
    },
  );

  app.delete(
    '/v2/registries/delegations/:id',
    {
      schema: {
        tags,
        summary: 'Revoke an ECR delegation',
        params: IdParams,
        response: { 204: Deleted, ...errorResponses },
      },
    },
    async (request, reply) => {
      await registries.revokeDelegation(principalOf(request).accountId, request.params.id);
      return reply.code(204).send();
    },
  );

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
