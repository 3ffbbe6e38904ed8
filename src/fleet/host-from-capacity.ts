/**
 * The domain `Host` a joined agent is: its reported capacity (protocol.ts `HostCapacity`, what
 * `discoverEngineHost` found on its engine) plus the facts of its join (its id, the data center and
 * cloud of its join token, its public IP and port range). Pure: the fleet service maps a join or a
 * capacity report through it, and refuses what cannot be a real host (`CAPACITY_INVALID` naming
 * the field, docs/fleet.md).
 *
 * GPUs keep the order the agent reported them in: placement's `gpuIndices` index that list, and the
 * agent maps an index to the same GPU (`gpuUuids[i]` is `capacity.gpus[i].uuid`). So a GPU is never
 * dropped from the middle: a host whose GPUs are not all one model the catalog knows is refused
 * rather than offered in part. GPU names map to catalog types as the Docker runtime's discovery
 * does (`catalogGpuType`).
 */
import type { Catalog, Cloud, Host } from '../domain/catalog.js';
import { catalogGpuType } from '../runtime/docker/discover-host.js';
import type { HostCapacity } from './protocol.js';

/** What the control plane knows of a host besides its capacity. */
export interface JoinFacts {
  hostId: string;
  /** the join token's */
  dataCenterId: string;
  /** the join token's */
  cloud: Cloud;
  publicIp: string;
  /** inclusive */
  portRange: [number, number];
}

export type HostMapping = { ok: true; host: Host } | { ok: false; field: string; reason: string };

/** Limits of a real host (docs/fleet.md, "Capacity"). */
export const CAPACITY_LIMITS = {
  vcpus: [1, 4096],
  memoryGb: [0.5, 65536],
  diskGb: [0, 1048576],
  maxGpus: 64,
  ports: [1024, 65535],
  maxPortCount: 20000,
  maxNotes: 20,
  maxNoteLength: 500,
} as const;

const GPU_UUID = /^GPU-[0-9a-fA-F-]{1,64}$/;
const CUDA_VERSION = /^\d{1,3}\.\d{1,3}$/;

const refuse = (field: string, reason: string): HostMapping => ({ ok: false, field, reason });
const inRange = (v: unknown, [min, max]: readonly [number, number]): v is number => typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max;

/** The host the agent's capacity and join facts describe, or the first field that cannot be real. */
export function hostFromCapacity(capacity: HostCapacity, facts: JoinFacts, catalog: Pick<Catalog, 'gpuTypes' | 'cpuFlavors' | 'dataCenters'>): HostMapping {
  const L = CAPACITY_LIMITS;
  if (!inRange(capacity.vcpus, L.vcpus) || !Number.isInteger(capacity.vcpus)) return refuse('capacity.vcpus', `must be a whole number from ${L.vcpus[0]} to ${L.vcpus[1]}`);
  if (!inRange(capacity.memoryGb, L.memoryGb)) return refuse('capacity.memoryGb', `must be from ${L.memoryGb[0]} to ${L.memoryGb[1]} GB`);
  if (!inRange(capacity.diskGb, L.diskGb)) return refuse('capacity.diskGb', `must be from ${L.diskGb[0]} to ${L.diskGb[1]} GB`);
  if (!catalog.dataCenters.some((d) => d.id === facts.dataCenterId)) return refuse('dataCenterId', `"${facts.dataCenterId}" is no data center of the catalog`);
  const [low, high] = facts.portRange;
  if (!Number.isInteger(low) || !Number.isInteger(high) || low < L.ports[0] || high > L.ports[1] || high < low)
    return refuse('portRange', `must be two whole numbers from ${L.ports[0]} to ${L.ports[1]}, the first not above the second`);
  if (high - low + 1 > L.maxPortCount) return refuse('portRange', `may hold at most ${L.maxPortCount} ports (it holds ${high - low + 1})`);

  const gpus = Array.isArray(capacity.gpus) ? capacity.gpus : [];
  if (gpus.length > L.maxGpus) return refuse('capacity.gpus', `at most ${L.maxGpus} GPUs (${gpus.length} reported)`);
  let gpuTypeId: string | null = null;
  const uuids = new Set<string>();
  for (const [i, gpu] of gpus.entries()) {
    if (typeof gpu.uuid !== 'string' || !GPU_UUID.test(gpu.uuid)) return refuse(`capacity.gpus[${i}].uuid`, 'must be "GPU-" followed by hex digits and dashes');
    if (uuids.has(gpu.uuid)) return refuse(`capacity.gpus[${i}].uuid`, `${gpu.uuid} is reported twice`);
    uuids.add(gpu.uuid);
    const type = typeof gpu.name === 'string' ? catalogGpuType(gpu.name, catalog.gpuTypes) : null;
    if (!type) return refuse(`capacity.gpus[${i}].name`, `"${String(gpu.name)}" is no GPU type of the catalog`);
    if (gpuTypeId !== null && type.id !== gpuTypeId) return refuse(`capacity.gpus[${i}].name`, `a host offers one GPU model: ${type.id} after ${gpuTypeId}`);
    gpuTypeId = type.id;
  }
  let cudaVersion: string | null = null;
  if (gpus.length > 0 && capacity.cudaVersion !== null) {
    if (typeof capacity.cudaVersion !== 'string' || !CUDA_VERSION.test(capacity.cudaVersion)) return refuse('capacity.cudaVersion', 'must be major.minor, e.g. "12.4", or null');
    cudaVersion = capacity.cudaVersion;
  }
  if (capacity.gpuMode !== 'nvidia' && capacity.gpuMode !== 'env-only') return refuse('capacity.gpuMode', 'must be "nvidia" or "env-only"');

  const notes = (Array.isArray(capacity.notes) ? capacity.notes : [])
    .filter((n): n is string => typeof n === 'string')
    .slice(0, L.maxNotes)
    .map((n) => n.slice(0, L.maxNoteLength));
  if (gpus.length > 0 && cudaVersion === null) notes.push('the agent reports no CUDA version: pods asking for one are not placed here');
  const known = new Set(catalog.cpuFlavors.map((f) => f.id));
  const flavors = (Array.isArray(capacity.cpuFlavors) ? capacity.cpuFlavors.filter((f): f is string => typeof f === 'string') : []).slice(0, 64);
  const unknownFlavors = flavors.filter((f) => !known.has(f));
  if (unknownFlavors.length > 0) notes.push(`CPU flavors ${unknownFlavors.map((f) => `"${f.slice(0, 40)}"`).join(', ')} are not in the catalog and not offered`);

  return {
    ok: true,
    host: {
      id: facts.hostId,
      dataCenterId: facts.dataCenterId,
      cloud: facts.cloud,
      cudaVersion,
      gpuTypeId,
      gpuCount: gpus.length,
      cpuFlavors: [...new Set(flavors.filter((f) => known.has(f)))],
      vcpus: capacity.vcpus,
      memoryGb: capacity.memoryGb,
      diskGb: capacity.diskGb,
      portRange: [low, high],
      publicIp: facts.publicIp,
      gpuUuids: gpus.map((g) => g.uuid),
      gpuMode: capacity.gpuMode,
      notes,
    },
  };
}
