/**
 * The host a Docker Engine is, discovered rather than declared: vCPUs and memory from the engine's
 * `GET /info`, GPUs from `nvidia-smi`, disk from the engine's data root; where it sits (data
 * center, cloud, public IP, port range) from the config. What it cannot offer is said in `notes`.
 */
import { statfs } from 'node:fs/promises';
import type { Catalog, GpuType, Host } from '../../domain/catalog.js';
import { fetchEngineInfo, isLocalEngine, parseDockerHost, type EngineInfo } from './engine-info.js';
import { queryNvidiaSmi, type NvidiaGpu, type NvidiaSmiResult } from './nvidia-smi.js';

const GiB = 1024 ** 3;

/**
 * The config's say in the host (the server's `runtime.docker`, the agent's flags): where it sits,
 * and what overrides discovery. Each key's meaning and default: docs/configuration.md.
 */
export interface HostSettings {
  /** The engine: `unix:///path/docker.sock` or `tcp://host:port`. */
  host: string;
  /** null: the engine's name */
  hostId: string | null;
  /** null: the catalog's first data center */
  dataCenterId: string | null;
  cloud: 'SECURE' | 'COMMUNITY';
  /** null: bindIp when it is one address, else the engine's TCP host, else 127.0.0.1 */
  publicIp: string | null;
  bindIp: string;
  portRange: [number, number];
  /** null: the free space under the engine's data root */
  diskGb: number | null;
  gpuMode: 'auto' | 'nvidia' | 'env-only';
  /** null: every catalog flavor on a host without GPUs, none on a GPU host */
  cpuFlavors: string[] | null;
}

export interface DiscoveryInput {
  info: EngineInfo;
  nvidia: NvidiaSmiResult;
  catalog: Catalog;
  settings: HostSettings;
  /** Free bytes under the engine's data root, or why they could not be read. */
  dataRootFree: { bytes: number } | { error: string };
}

const normalize = (name: string): string =>
  name
    .toLowerCase()
    .replace(/^nvidia\s+/, '')
    .replace(/[\s_-]+/g, ' ')
    .trim();

/** The catalog GPU type nvidia-smi's `name` is, matched on id then display name, with or without an `NVIDIA ` prefix. */
export function catalogGpuType(name: string, gpuTypes: readonly GpuType[]): GpuType | null {
  const key = normalize(name);
  return (
    gpuTypes.find((t) => normalize(t.id) === key) ?? gpuTypes.find((t) => normalize(t.displayName) === key) ?? null
  );
}

const plural = (n: number, one: string): string => `${n} ${one}${n === 1 ? '' : 's'}`;
const indices = (gpus: NvidiaGpu[]): string =>
  `${gpus.length === 1 ? 'index' : 'indices'} ${gpus.map((g) => g.index).join(', ')}`;

interface OfferedGpus {
  type: GpuType | null;
  gpus: NvidiaGpu[];
  notes: string[];
}

/**
 * One GPU model per host (placement's rule): the most numerous model the catalog knows, ties to
 * the one at the lowest index; the others, and models the catalog does not know, are noted.
 */
function offeredGpus(nvidia: NvidiaSmiResult, gpuTypes: readonly GpuType[]): OfferedGpus {
  if (nvidia.kind === 'absent')
    return {
      type: null,
      gpus: [],
      notes:
        nvidia.command === 'nvidia-smi'
          ? []
          : [`the nvidia-smi command "${nvidia.command}" was not found; no GPUs are offered`],
    };
  if (nvidia.kind === 'failed') return { type: null, gpus: [], notes: [`${nvidia.message}; no GPUs are offered`] };
  const known = new Map<string, { type: GpuType; gpus: NvidiaGpu[] }>();
  const unknown = new Map<string, NvidiaGpu[]>();
  for (const gpu of nvidia.gpus) {
    const type = catalogGpuType(gpu.name, gpuTypes);
    if (type) {
      const group = known.get(type.id) ?? { type, gpus: [] };
      group.gpus.push(gpu);
      known.set(type.id, group);
    } else unknown.set(gpu.name, [...(unknown.get(gpu.name) ?? []), gpu]);
  }
  const notes = [...unknown].map(
    ([name, gpus]) =>
      `${plural(gpus.length, 'GPU')} "${name}" (${indices(gpus)}) ${gpus.length === 1 ? 'is' : 'are'} no GPU type of the catalog and not offered (add a catalog.gpuTypes entry with id "${name}")`,
  );
  const groups = [...known.values()].sort(
    (a, b) => b.gpus.length - a.gpus.length || a.gpus[0]!.index - b.gpus[0]!.index,
  );
  const [chosen, ...rest] = groups;
  if (!chosen) return { type: null, gpus: [], notes };
  for (const other of rest)
    notes.push(
      `${plural(other.gpus.length, 'GPU')} ${other.type.id} (${indices(other.gpus)}) not offered: a host offers one GPU model, its most numerous (${chosen.gpus.length} × ${chosen.type.id})`,
    );
  return { type: chosen.type, gpus: chosen.gpus, notes };
}

/** `nvidia` when the engine can hand GPUs to containers (its `nvidia` runtime, or CDI GPU devices). */
function engineGpuMode(info: EngineInfo): { mode: 'nvidia' | 'env-only'; what: string } {
  const runtimes = Object.keys(info.Runtimes ?? {});
  if (runtimes.includes('nvidia')) return { mode: 'nvidia', what: 'the engine has the nvidia runtime' };
  if ((info.DiscoveredDevices ?? []).some((d) => d.Source === 'cdi' && d.ID?.startsWith('nvidia.com/gpu')))
    return { mode: 'nvidia', what: 'the engine has CDI GPU devices' };
  return {
    mode: 'env-only',
    what: `the engine has no nvidia runtime (its runtimes: ${runtimes.join(', ') || 'none'}) and no CDI GPU devices`,
  };
}

/** The storage drivers that limit a container's writable layer (`StorageOpt size`); overlay2 only on xfs (with pquota). */
function diskLimitNote(info: EngineInfo): string | null {
  const driver = info.Driver ?? '';
  const backing = (info.DriverStatus ?? []).find(([label]) => label === 'Backing Filesystem')?.[1] ?? '';
  if (['devicemapper', 'btrfs', 'zfs', 'windowsfilter'].includes(driver)) return null;
  if (driver === 'overlay2' && backing === 'xfs') return null;
  return `the storage driver (${driver || 'unknown'}${backing ? ` on ${backing}` : ''}) cannot cap a container's disk: containerDiskInGb is reserved on the host, and a container past it is stopped when the runtime samples its size`;
}

/** The address clients reach published ports at: the config's, else the bind address, else the engine's TCP host, else loopback. */
function publicIpOf(settings: HostSettings): string {
  if (settings.publicIp) return settings.publicIp;
  if (settings.bindIp !== '0.0.0.0' && settings.bindIp !== '::') return settings.bindIp;
  const address = parseDockerHost(settings.host);
  return address.host !== undefined && !isLocalEngine(address) ? address.host : '127.0.0.1';
}

/** The host the engine is. Pure: the engine's answers, nvidia-smi's and the data root's free space come in. */
export function discoverHost({ info, nvidia, catalog, settings, dataRootFree }: DiscoveryInput): Host {
  if (typeof info.NCPU !== 'number' || typeof info.MemTotal !== 'number')
    throw new Error('the Docker Engine answered GET /info without NCPU and MemTotal');
  const dataCenterId = settings.dataCenterId ?? catalog.dataCenters[0]?.id;
  if (!dataCenterId) throw new Error('the catalog has no data center to put the discovered host in');
  const gpus = offeredGpus(nvidia, catalog.gpuTypes);
  const notes = [...gpus.notes];
  const engine = engineGpuMode(info);
  const gpuMode = settings.gpuMode === 'auto' ? engine.mode : settings.gpuMode;
  if (gpus.type && gpuMode === 'env-only')
    notes.push(
      settings.gpuMode === 'env-only'
        ? 'runtime.docker.gpuMode is env-only: containers get only NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES, not the GPU devices'
        : `${engine.what}: containers get only NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES, not the GPU devices (install the NVIDIA Container Toolkit, or set runtime.docker.gpuMode: nvidia)`,
    );
  const cudaVersion = gpus.type && nvidia.kind === 'ok' ? nvidia.cudaVersion : null;
  if (gpus.type && cudaVersion === null)
    notes.push("nvidia-smi's banner names no CUDA version: pods asking for one are not placed here");
  let diskGb: number;
  if (settings.diskGb !== null) diskGb = settings.diskGb;
  else if ('bytes' in dataRootFree) diskGb = Math.floor(dataRootFree.bytes / GiB);
  else {
    diskGb = 0;
    notes.push(`the free disk of the engine's data root is unknown (${dataRootFree.error}): set runtime.docker.diskGb`);
  }
  const diskNote = diskLimitNote(info);
  if (diskNote) notes.push(diskNote);
  const host: Host = {
    id: settings.hostId ?? (info.Name || 'docker'),
    dataCenterId,
    cloud: settings.cloud,
    cudaVersion,
    gpuTypeId: gpus.type?.id ?? null,
    gpuCount: gpus.gpus.length,
    cpuFlavors: settings.cpuFlavors ?? (gpus.type ? [] : catalog.cpuFlavors.map((f) => f.id)),
    vcpus: info.NCPU,
    memoryGb: Math.floor(info.MemTotal / GiB),
    diskGb,
    portRange: settings.portRange,
    publicIp: publicIpOf(settings),
    gpuUuids: gpus.gpus.map((g) => g.uuid),
    gpuMode,
    notes,
  };
  return host;
}

/** One line for the start-up banner: `vm (US-TX-3): 2 vCPUs, 23 GB, no GPUs, disk 80 GB`. */
export function describeHost(host: Host): string {
  const gpus = host.gpuTypeId
    ? `${host.gpuCount} × ${host.gpuTypeId}${host.cudaVersion ? ` (CUDA ${host.cudaVersion})` : ''}${host.gpuMode === 'env-only' ? ' env-only' : ''}`
    : 'no GPUs';
  return `${host.id} (${host.dataCenterId}): ${plural(host.vcpus, 'vCPU')}, ${host.memoryGb} GB, ${gpus}, disk ${host.diskGb} GB`;
}

/** The free space under the engine's data root, when the engine is on this machine. */
export async function freeBytes(info: EngineInfo, dockerHost: string): Promise<DiscoveryInput['dataRootFree']> {
  const root = info.DockerRootDir;
  if (!root) return { error: 'the engine names no data root' };
  if (!isLocalEngine(parseDockerHost(dockerHost)))
    return { error: `the engine at ${dockerHost} is on another machine` };
  try {
    const s = await statfs(root);
    return { bytes: s.bavail * s.bsize };
  } catch (err) {
    return { error: `${root}: ${(err as Error).message}` };
  }
}

/**
 * Discovers the host of the engine `settings.host` names: `GET /info`, nvidia-smi, the data
 * root's free space. Rejects (EngineUnreachable) when the engine does not answer.
 */
export async function discoverEngineHost(
  settings: HostSettings & {
    /** The nvidia-smi to run: a path, or a name found on PATH. */
    nvidiaSmi: string;
  },
  catalog: Catalog,
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<{ host: Host; info: EngineInfo }> {
  const info = await fetchEngineInfo(settings.host, { timeoutMs: options.timeoutMs ?? 5000 });
  const [nvidia, dataRootFree] = await Promise.all([
    queryNvidiaSmi(settings.nvidiaSmi, options.env ? { env: options.env } : {}),
    freeBytes(info, settings.host),
  ]);
  return { host: discoverHost({ info, nvidia, catalog, settings, dataRootFree }), info };
}
