import type { TypedApp } from '../type-provider.js';
import { aliasHook } from '../field-aliases.js';
import { Type, type Static } from '@sinclair/typebox';
import type { TransportServices } from '../../transport/services.js';
import { VOLUME_NAME_LENGTH, VOLUME_SIZE_GB, type NetworkVolume } from '../../domain/network-volume.js';
import { principalOf } from '../plugins/auth.js';
import { Deleted, errorResponses, IdParams, StringEnum } from '../schemas.js';

const closed = { additionalProperties: false } as const;
const Name = Type.String({ minLength: VOLUME_NAME_LENGTH.min, maxLength: VOLUME_NAME_LENGTH.max });
const Size = Type.Integer({ minimum: VOLUME_SIZE_GB.min, maximum: VOLUME_SIZE_GB.max, description: 'GB' });
/** VolumeType: Gantry has one storage tier, STANDARD; HIGH_PERFORMANCE answers 400 (docs/status.md). */
const VolumeType = StringEnum(['STANDARD', 'HIGH_PERFORMANCE'], {
  description: 'storage tier, immutable; Gantry offers STANDARD only (HIGH_PERFORMANCE answers 400)',
});

const CreateNetworkVolumeRequest = Type.Object(
  {
    name: Name,
    size: Size,
    dataCenter: Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'a data center of GET /v2/catalog/datacenters; `dataCenterId` is accepted as its older name',
    }),
    type: Type.Optional(VolumeType),
  },
  closed,
);
const UpdateNetworkVolumeRequest = Type.Object(
  {
    name: Type.Optional(Name),
    size: Type.Optional(
      Type.Integer({
        minimum: VOLUME_SIZE_GB.min,
        maximum: VOLUME_SIZE_GB.max,
        description: 'GB; may only grow (a smaller size answers 400)',
      }),
    ),
  },
  {
    ...closed,
    minProperties: 1,
    description: 'Only the fields sent change; an empty body answers 422. The data center and the type are immutable.',
  },
);

const NetworkVolumeSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  size: Type.Integer(),
  dataCenter: Type.String(),
  type: VolumeType,
});
const NetworkVolumeList = Type.Object({ networkVolumes: Type.Array(NetworkVolumeSchema) });

const view = ({ id, name, size, dataCenterId }: NetworkVolume): Static<typeof NetworkVolumeSchema> => ({
  id,
  name,
  size,
  dataCenter: dataCenterId,
  type: 'STANDARD',
});

/** `dataCenterId`, the older name of `dataCenter`, on create. */
const createAliases = aliasHook({ dataCenterId: 'dataCenter' });

const tags = ['network volumes'];

export function volumeRoutes(app: TypedApp, { volumes }: TransportServices): void {
  app.post(
    '/v2/network-volumes',
    {
      schema: {
        tags,
        summary: 'Create a network volume',
        body: CreateNetworkVolumeRequest,
        response: { 201: NetworkVolumeSchema, ...errorResponses },
      },
      preValidation: createAliases,
    },
    async (request, reply) => {
      const { dataCenter, type, ...rest } = request.body;
      const created = await volumes.create(principalOf(request).accountId, {
        ...rest,
        dataCenterId: dataCenter,
        ...(type !== undefined ? { type } : {}),
      });
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
        body: UpdateNetworkVolumeRequest,
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
