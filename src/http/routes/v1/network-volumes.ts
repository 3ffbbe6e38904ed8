/** REST v1 network volumes (`/v1/networkvolumes`) over VolumesService. */
import type { TypedApp } from '../../type-provider.js';
import { Type, type Static } from '@sinclair/typebox';
import type { NetworkVolume } from '../../../domain/network-volume.js';
import type { TransportServices } from '../../../transport/services.js';
import { principalOf } from '../../plugins/auth.js';
import { closed, Deleted, errorResponses, IdParam } from './common.js';

const tags = ['network volumes'];
const Params = IdParam('networkVolumeId');
type Params = Static<typeof Params>;
const Name = Type.String({ minLength: 1, maxLength: 191 });
const Size = Type.Integer({ minimum: 10, maximum: 4000, description: 'GB' });

const CreateBody = Type.Object(
  { name: Name, size: Size, dataCenterId: Type.String({ minLength: 1, maxLength: 64 }) },
  closed,
);
const UpdateBody = Type.Object(
  { name: Type.Optional(Name), size: Type.Optional({ ...Size, description: 'GB; may only grow' }) },
  closed,
);
const VolumeSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  size: Type.Integer(),
  dataCenterId: Type.String(),
});
const view = ({ id, name, size, dataCenterId }: NetworkVolume): Static<typeof VolumeSchema> => ({
  id,
  name,
  size,
  dataCenterId,
});

export function networkVolumeV1Routes(app: TypedApp, { volumes }: TransportServices): void {
  app.post(
    '/networkvolumes',
    {
      schema: {
        tags,
        operationId: 'CreateNetworkVolume',
        summary: 'Create a network volume',
        body: CreateBody,
        response: { 200: VolumeSchema, ...errorResponses },
      },
    },
    async (request) => view(await volumes.create(principalOf(request).accountId, request.body)),
  );

  app.get(
    '/networkvolumes',
    {
      schema: {
        tags,
        operationId: 'ListNetworkVolumes',
        summary: 'List your network volumes (a bare array)',
        response: { 200: Type.Array(VolumeSchema), ...errorResponses },
      },
    },
    async (request) => (await volumes.list(principalOf(request).accountId)).map(view),
  );

  app.get(
    '/networkvolumes/:networkVolumeId',
    {
      schema: {
        tags,
        operationId: 'GetNetworkVolume',
        summary: 'Read one network volume',
        params: Params,
        response: { 200: VolumeSchema, ...errorResponses },
      },
    },
    async (request) => view(await volumes.get(principalOf(request).accountId, request.params.networkVolumeId)),
  );

  for (const [method, url, operationId] of [
    ['PATCH', '/networkvolumes/:networkVolumeId', 'UpdateNetworkVolume'],
    ['POST', '/networkvolumes/:networkVolumeId/update', 'UpdateNetworkVolumePost'],
  ] as const)
    app.route({
      method,
      url,
      schema: {
        tags,
        operationId,
        summary: 'Rename or grow a network volume',
        params: Params,
        body: UpdateBody,
        response: { 200: VolumeSchema, ...errorResponses },
      },
      handler: async (request) =>
        view(await volumes.update(principalOf(request).accountId, request.params.networkVolumeId, request.body)),
    });

  app.delete(
    '/networkvolumes/:networkVolumeId',
    {
      schema: {
        tags,
        operationId: 'DeleteNetworkVolume',
        summary: 'Delete a network volume',
        params: Params,
        response: { 204: Deleted, ...errorResponses },
      },
    },
    async (request, reply) => {
      await volumes.delete(principalOf(request).accountId, request.params.networkVolumeId);
      return reply.code(204).send();
    },
  );
}
