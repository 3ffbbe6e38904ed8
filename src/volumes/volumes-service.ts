import type { Catalog } from '../domain/catalog.js';
import type { Clock } from '../domain/clock.js';
import { ApiError, badRequest, notFound } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { Runtime } from '../runtime/runtime.js';
import type { VolumeStore } from '../store/volume-store.js';
import type { NetworkVolume } from '../domain/network-volume.js';

export type { NetworkVolume } from '../domain/network-volume.js';

export interface CreateVolumeInput {
  name: string;
  /** GB, 10-4000 (checked by the route schema) */
  size: number;
  dataCenterId: string;
  /** The storage tier: Gantry has one, STANDARD; HIGH_PERFORMANCE is refused with 400. @default STANDARD */
  type?: 'STANDARD' | 'HIGH_PERFORMANCE';
}

export interface PatchVolumeInput {
  name?: string;
  /** GB; may only grow */
  size?: number;
  /** Immutable: accepted only when equal to the volume's own, so a client may send back what it read. */
  dataCenterId?: string;
}

export interface VolumesServiceDeps {
  store: VolumeStore;
  clock: Clock;
  /** Where a volume's data lives is the runtime's: it creates it when an instance first mounts the volume, and deletes it. */
  runtime: Pick<Runtime, 'removeVolume'>;
  /** The data centers a volume may be created in. */
  catalog: Pick<Catalog, 'dataCenters'>;
}

/**
 * Network volumes: a row per volume. Its data is the runtime's (a folder of the data dir, a Docker
 * volume, a PVC), made when an instance first mounts it and deleted with the volume.
 */
export class VolumesService {
  readonly store: VolumeStore;

  constructor(private readonly deps: VolumesServiceDeps) {
    this.store = deps.store;
  }

  async create(accountId: string, input: CreateVolumeInput): Promise<NetworkVolume> {
    const known = this.deps.catalog.dataCenters.map((d) => d.id);
    if (!known.includes(input.dataCenterId))
      throw badRequest(`Data center "${input.dataCenterId}" is unknown; valid data centers: ${known.join(', ')}.`);
    if (input.type !== undefined && input.type !== 'STANDARD')
      throw badRequest(
        `Volume type ${input.type} is not offered: Gantry's network volumes have one storage tier, STANDARD. Send type STANDARD or leave it out.`,
      );
    const volume: NetworkVolume = {
      id: newId(),
      accountId,
      name: input.name,
      size: input.size,
      dataCenterId: input.dataCenterId,
      createdAt: this.deps.clock.now(),
    };
    await this.store.insert(volume);
    return volume;
  }

  async list(accountId: string): Promise<NetworkVolume[]> {
    return this.store.list(accountId);
  }

  /** The caller's volume, or 404 NOT_FOUND. */
  async get(accountId: string, id: string): Promise<NetworkVolume> {
    const volume = await this.store.get(accountId, id);
    if (!volume) throw notFound('network volume', id);
    return volume;
  }

  /** Renames and/or grows a volume. Shrinking, or moving it to another data center, is refused with 400. */
  async update(accountId: string, id: string, patch: PatchVolumeInput): Promise<NetworkVolume> {
    const volume = await this.get(accountId, id);
    if (patch.dataCenterId !== undefined && patch.dataCenterId !== volume.dataCenterId)
      throw badRequest(
        `dataCenterId is immutable: volume "${id}" stays in ${volume.dataCenterId}; create a new volume in ${patch.dataCenterId} instead.`,
      );
    if (patch.size !== undefined && patch.size < volume.size)
      throw badRequest(
        `A network volume can only grow: volume "${id}" has ${volume.size} GB, so size must be at least ${volume.size} (got ${patch.size}).`,
      );
    const changes = {
      ...(patch.name !== undefined ? { name: patch.name } : {}),
      ...(patch.size !== undefined ? { size: patch.size } : {}),
    };
    if (!(await this.store.update(id, changes, this.deps.clock.now()))) throw notFound('network volume', id);
    return { ...volume, ...changes };
  }

  /**
   * Refused with 400 VOLUME_IN_USE while a pod that is not TERMINATED mounts it, or a serverless
   * endpoint names it (its workers mount it at every launch); the runtime deletes its data.
   */
  async delete(accountId: string, id: string): Promise<void> {
    const volume = await this.get(accountId, id);
    const pods = await this.store.podsMounting(accountId, id);
    if (pods.length > 0)
      throw new ApiError(
        'VOLUME_IN_USE',
        `Network volume "${id}" is mounted by pod(s) ${pods.map((p) => `"${p}"`).join(', ')}; terminate them before deleting it.`,
      );
    const endpoints = await this.store.endpointsUsing(accountId, id);
    if (endpoints.length > 0)
      throw new ApiError(
        'VOLUME_IN_USE',
        `Network volume "${id}" is used by serverless endpoint(s) ${endpoints.map((e) => `"${e.name}" (${e.id})`).join(', ')}; set their networkVolumeId to another volume or none, or delete them, before deleting it.`,
      );
    if (!(await this.store.delete(id, this.deps.clock.now()))) throw notFound('network volume', id);
    await this.deps.runtime.removeVolume({ kind: 'network', volumeId: id, dataCenterId: volume.dataCenterId });
  }
}
