import { ApiError, isApiError, validationFailed } from '../domain/errors.js';
import { VOLUME_NAME_LENGTH, VOLUME_SIZE_GB, type NetworkVolume } from '../domain/network-volume.js';
import { toGqlDataCenter } from './catalog-resolvers.js';
import type { GraphqlContext } from './context.js';
import type { ResolverMap } from './schema.js';

/** A volume in the GraphQL shape; `dataCenter` is resolved from `dataCenterId`. */
export const toGqlVolume = ({ id, name, size, dataCenterId }: NetworkVolume) => ({ id, name, size, dataCenterId });

interface CreateInput {
  name?: string | null;
  size?: number | null;
  dataCenterId?: string | null;
}

/** The bounds REST's schema holds a create to (src/http/routes/network-volumes.ts). */
function checkCreate({ name, size, dataCenterId }: CreateInput): { name: string; size: number; dataCenterId: string } {
  const problems = [
    ...(name == null || name.length < VOLUME_NAME_LENGTH.min || name.length > VOLUME_NAME_LENGTH.max
      ? [`name: is required, ${VOLUME_NAME_LENGTH.min}-${VOLUME_NAME_LENGTH.max} characters`]
      : []),
    ...(size == null || size < VOLUME_SIZE_GB.min || size > VOLUME_SIZE_GB.max
      ? [`size: is required, ${VOLUME_SIZE_GB.min}-${VOLUME_SIZE_GB.max} GB`]
      : []),
    ...(dataCenterId ? [] : ['dataCenterId: is required (see the dataCenters query)']),
  ];
  if (problems.length > 0) throw validationFailed(problems);
  return { name: name!, size: size!, dataCenterId: dataCenterId! };
}

export const volumeResolvers: ResolverMap<GraphqlContext> = {
  Mutation: {
    createNetworkVolume: async (_root, args: { input?: CreateInput | null }, { services, principal }: GraphqlContext) =>
      toGqlVolume(await services.volumes.create(principal.accountId, checkCreate(args.input ?? {}))),
    deleteNetworkVolume: async (
      _root,
      args: { input?: { id?: string | null } | null },
      { services, principal }: GraphqlContext,
    ) => {
      const id = args.input?.id ?? '';
      try {
        await services.volumes.delete(principal.accountId, id);
      } catch (err) {
        // dstack knows a volume already gone by this sentence (its compute.py delete_volume).
        if (isApiError(err) && err.code === 'NOT_FOUND')
          throw new ApiError('NOT_FOUND', `Tried to delete nonexistent network volume "${id}".`);
        throw err;
      }
      return null;
    },
  },
  NetworkVolume: {
    dataCenter: (volume: { dataCenterId: string }, _args, { services }: GraphqlContext) => {
      const known = services.catalog.listDataCenters().find((d) => d.id === volume.dataCenterId);
      return known
        ? toGqlDataCenter(known)
        : // a data center removed from the config since: its id is all that is known
          {
            id: volume.dataCenterId,
            name: volume.dataCenterId,
            location: '',
            countryCode: '',
            listed: false,
            gpuTypes: [],
          };
    },
  },
};
