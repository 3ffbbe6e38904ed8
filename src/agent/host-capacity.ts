/**
 * What the agent's host offers, found as `runtime: docker` finds its host (discover-host.ts: the
 * engine's `GET /info`, nvidia-smi, the data root's free space), told to the control plane as
 * {@link HostCapacity}.
 *
 * The agent does not hold the control plane's catalog: GPUs are grouped by the model nvidia-smi
 * names and the most numerous model is offered (a host offers one), under nvidia-smi's name; the
 * control plane matches that name to its catalog, and refuses a model it does not know. Index `i`
 * of `gpus` is the GPU placement's `gpuIndices` name `i`, on both sides.
 */
import type { Catalog, GpuType, Host } from '../domain/catalog.js';
import { defaultCatalog } from '../domain/catalog.js';
import type { HostCapacity } from '../fleet/protocol.js';
import { discoverHost, freeBytes, type DiscoveryInput, type HostSettings } from '../runtime/docker/discover-host.js';
import { fetchEngineInfo } from '../runtime/docker/engine-info.js';
import { queryNvidiaSmi, type NvidiaSmiResult } from '../runtime/docker/nvidia-smi.js';

export interface AgentHostSettings {
  /** the engine: `unix:///…` or `tcp://host:port` */
  dockerHost: string;
  /** the address clients reach published ports at; null: as discovery decides (127.0.0.1 for a local engine) */
  publicIp: string | null;
  portRange: [number, number];
  /** disk to offer, GB; null: the free space under the engine's data root */
  diskGb: number | null;
  gpuMode: 'auto' | 'nvidia' | 'env-only';
  /** the nvidia-smi to run: a path, or a name found on PATH */
  nvidiaSmi: string;
}

export interface DiscoveredHost {
  capacity: HostCapacity;
  /** The host as the Docker runtime takes it (GPU UUIDs by index, gpuMode, public IP). */
  host: Host;
}

/** Stands in for the data center until the join answers the host's (the control plane decides it). */
const UNPLACED = 'unplaced';

const gpuTypeNamed = (name: string): GpuType => ({
  id: name,
  displayName: name,
  manufacturer: 'Nvidia',
  memoryInGb: 0,
  pool: '',
  securePrice: 0,
  communityPrice: 0,
  globalNetworking: false,
});

/** A catalog whose GPU types are the models nvidia-smi lists, and whose CPU flavors are the built-in ones. */
function agentCatalog(nvidia: NvidiaSmiResult): Catalog {
  const names = nvidia.kind === 'ok' ? [...new Set(nvidia.gpus.map((g) => g.name))] : [];
  return { gpuTypes: names.map(gpuTypeNamed), pools: [], cpuFlavors: defaultCatalog().cpuFlavors, dataCenters: [] };
}

/** Discovery speaks of the Docker runtime's config keys; the agent's are its flags. */
const inAgentTerms = (note: string): string =>
  note.replaceAll('runtime.docker.gpuMode', '--gpu-mode').replaceAll('runtime.docker.diskGb', '--disk-gb');

/** The capacity `host` offers, its GPUs named and sized as nvidia-smi lists them. Pure. */
function capacityOf(host: Host, nvidia: NvidiaSmiResult): HostCapacity {
  const listed = nvidia.kind === 'ok' ? nvidia.gpus : [];
  const gpus = (host.gpuUuids ?? []).map((uuid) => {
    const gpu = listed.find((g) => g.uuid === uuid);
    return { uuid, name: gpu?.name ?? host.gpuTypeId ?? '', memoryMb: gpu?.memoryMiB ?? 0 };
  });
  return {
    vcpus: host.vcpus,
    memoryGb: host.memoryGb,
    diskGb: host.diskGb,
    gpus,
    cudaVersion: gpus.length > 0 ? host.cudaVersion : null,
    gpuMode: host.gpuMode ?? 'env-only',
    cpuFlavors: host.cpuFlavors,
    notes: (host.notes ?? []).map(inAgentTerms),
  };
}

/** The host `settings` and what discovery found make. Pure. */
export function agentHostOf(
  found: Pick<DiscoveryInput, 'info' | 'nvidia' | 'dataRootFree'>,
  settings: AgentHostSettings,
): DiscoveredHost {
  const hostSettings: HostSettings = {
    host: settings.dockerHost,
    hostId: null,
    dataCenterId: UNPLACED,
    cloud: 'SECURE',
    publicIp: settings.publicIp,
    bindIp: '0.0.0.0',
    portRange: settings.portRange,
    diskGb: settings.diskGb,
    gpuMode: settings.gpuMode,
    cpuFlavors: null,
  };
  const host = discoverHost({ ...found, catalog: agentCatalog(found.nvidia), settings: hostSettings });
  return { host, capacity: capacityOf(host, found.nvidia) };
}

/**
 * Discovers the host of the engine `settings.dockerHost` names. Rejects (EngineUnreachable) when
 * the engine does not answer.
 * @param options.env the environment nvidia-smi runs in @default process.env
 */
export async function discoverAgentHost(
  settings: AgentHostSettings,
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<DiscoveredHost> {
  const info = await fetchEngineInfo(settings.dockerHost, { timeoutMs: options.timeoutMs ?? 5_000 });
  const [nvidia, dataRootFree] = await Promise.all([
    queryNvidiaSmi(settings.nvidiaSmi, options.env ? { env: options.env } : {}),
    freeBytes(info, settings.dockerHost),
  ]);
  return agentHostOf({ info, nvidia, dataRootFree }, settings);
}
