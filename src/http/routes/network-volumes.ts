import type { TypedApp } from '../type-provider.js';
import { Type, type Static } from '@sinclair/typebox';
import type { Services } from '../../services.js';
import type { NetworkVolume } from '../../domain/network-volume.js';
import { principalOf } from '../plugins/auth.js';
import { Deleted, errorResponses, IdParams } from '../schemas.js';

const closed = { additionalProperties: false } as const;
const Name = Type.String({ minLength: 1, maxLength: 191 });
const Size = Type.Integer({ minimum: 10, maximum: 4000, description: 'GB' });

const CreateNetworkVolumeRequest = Type.Object(
  {
    name: Name,
    size: Size,
    dataCenterId: Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'a data center of GET /v2/catalog/datacenters',
    }),
  },
  closed,
);
const PatchNetworkVolumeRequest = Type.Object(
  {
    name: Type.Optional(Name),
    size: Type.Optional(
      Type.Integer({ minimum: 10, maximum: 4000, description: 'GB; may only grow (a smaller size answers 400)' }),
    ),
    dataCenterId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: 'immutable: accepted only when equal to the current one; another value answers 400',
      }),
    ),
  },
  closed,
);

const NetworkVolumeSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  size: Type.Integer(),
  dataCenterId: Type.String(),
});
const NetworkVolumeList = Type.Object({ networkVolumes: Type.Array(NetworkVolumeSchema) });

const view = ({ id, name, size, dataCenterId }: NetworkVolume): Static<typeof NetworkVolumeSchema> => ({
  id,
  name,
  size,
  dataCenterId,
});
const tags = ['network volumes'];

export function volumeRoutes(app: TypedApp, { volumes }: Services): void {
  app.post(
    '/v2/network-volumes',
    {
      schema: {
        tags,
        summary: 'Create a network volume',
        body: CreateNetworkVolumeRequest,
        response: { 201: NetworkVolumeSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const created = await volumes.create(principalOf(request).accountId, request.body);
      return reply.code(201).send(view(created));
    },
  );

  app.get(
    '/v2/network-volumes',
    { schema: { tags, summary: 'List your network volumes', response: { 200: NetworkVolumeList, ...errorResponses } } },
    async (request) => ({ networkVolumes: (await volumes.list(principalOf(request).accountId)).map(view) }),
  );

  app.get(
    '/v2/network-volumes/:id',
    {
      schema: {
        tags,
        summary: 'Get a network volume',
        params: IdParams,
        response: { 200: NetworkVolumeSchema, ...errorResponses },
      },
    },
    async (request) => view(await volumes.get(principalOf(request).accountId, request.params.id)),
  );

  app.patch(
    '/v2/network-volumes/:id',
    {
      schema: {
        tags,
        summary: 'Rename or grow a network volume',
        params: IdParams,
        body: PatchNetworkVolumeRequest,
        response: { 200: NetworkVolumeSchema, ...errorResponses },
      },
    },
    async (request) => view(await volumes.update(principalOf(request).accountId, request.params.id, request.body)),
  );

  app.delete(
    '/v2/network-volumes/:id',
    {
      schema: {
        tags,
        summary: 'Delete a network volume and its data',
        description: 'Refused with 400 VOLUME_IN_USE while a pod that is not terminated mounts it.',
        params: IdParams,
        response: { 204: Deleted, ...errorResponses },
      },
    },
    async (request, reply) => {
      await volumes.delete(principalOf(request).accountId, request.params.id);
      return reply.code(204).send();
    },
  );
}
