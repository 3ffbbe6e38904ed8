/**
 * What a pod names of its account's other resources, checked to be the account's own: a registry
 * credential, a network volume. An unknown one is 400 UNKNOWN_REFERENCE naming where to look,
 * rather than the 404 its own route answers.
 */
import { ApiError, isApiError } from '../domain/errors.js';
import type { RegistriesService } from '../registries/registries-service.js';
import type { VolumesService } from '../volumes/volumes-service.js';

/** Checks that the registry credential is one of the account's. */
export async function checkRegistry(
  registries: Pick<RegistriesService, 'get'>,
  accountId: string,
  registryId: string,
): Promise<void> {
  try {
    await registries.get(accountId, registryId);
  } catch (err) {
    if (isApiError(err) && err.code === 'NOT_FOUND')
      throw new ApiError(
        'UNKNOWN_REFERENCE',
        `Unknown registry "${registryId}": it is not one of this account's registry credentials (GET /v2/registries).`,
      );
    throw err;
  }
}

/** The account's network volume with this id. */
export async function volumeOf(
  volumes: Pick<VolumesService, 'get'>,
  accountId: string,
  volumeId: string,
): ReturnType<VolumesService['get']> {
  try {
    return await volumes.get(accountId, volumeId);
  } catch (err) {
    if (isApiError(err) && err.code === 'NOT_FOUND')
      throw new ApiError(
        'UNKNOWN_REFERENCE',
        `Unknown network volume "${volumeId}": it is not one of this account's volumes (GET /v2/network-volumes).`,
      );
    throw err;
  }
}
