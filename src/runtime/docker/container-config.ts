/**
 * What a container is created from: a pure function of the instance's spec and what the runtime
 * knows of its engine, so every rule of the mapping is tested without one.
 */
import { createHash } from 'node:crypto';
import type { Host } from '../../domain/catalog.js';
import { splitArgs } from '../split-args.js';
import type { InstanceSpec } from '../runtime.js';
import { containerEnv, gpuDeviceIds } from './container-env.js';
import { LABEL, containerNameOf, instanceLabels, networkVolumeNameOf, podVolumeNameOf } from './docker-names.js';
import type { ContainerCreateBody, EndpointSettings, Labels, MountSpec, PortBindingSpec } from './engine-types.js';

export interface ContainerContext {
  namespace: string;
  host: Pick<Host, 'publicIp' | 'gpuUuids' | 'gpuMode'>;
  /** address published ports bind on */
  bindIp: string;
  /** Whether `diskGb` becomes a `StorageOpt.size` (only storage drivers with quotas take it). */
  diskLimit: boolean;
  /** The engine's CPU count: `NanoCpus` is capped at it (the engine refuses more). null: not capped. */
  engineCpus: number | null;
  /** Open files a container may hold (soft and hard); null: the engine's own limit (it refused to raise a container's to this). */
  openFiles: number | null;
  /** Rotates the json-file log at this size (2 files kept); null leaves the engine's logging as configured. */
  logMaxBytes: number | null;
  /**
   * The engine network the instance joins (its account's, or the one `spec.network` names), and
   * whether its fixed IP may be asked for; null: the engine's default bridge (only when the
   * runtime keeps no account networks).
   */
  network: { name: string; fixedIp: boolean } | null;
  /** Whether the container gets the hardening below (on, unless a test takes a defence away to show another holds alone). */
  hardening: boolean;
}

interface VolumePlan {
  name: string;
  labels: Labels;
}

export interface ContainerPlan {
  name: string;
  body: ContainerCreateBody;
  /** also in `body.Labels['gantry.spec']` */
  specHash: string;
  /** Named volumes to create (with their labels) before the container. */
  volumes: VolumePlan[];
}

const GiB = 1024 ** 3;

/** Processes (threads included) one container may hold: ample for ML stacks, a wall for a fork bomb. */
export const CONTAINER_PIDS_LIMIT = 16_384;

/**
 * Capabilities taken from Docker's default set. NET_RAW: raw and packet sockets, with which a
 * container forges (ARP replies claiming its gateway) or sniffs traffic on its segment; ping keeps
 * working over ICMP datagram sockets, which Docker allows every container. MKNOD: device nodes.
 * What images commonly need stays: root inside, chown, setuid/setgid (sshd), chroot, binding low ports.
 */
export const DROPPED_CAPABILITIES = ['NET_RAW', 'MKNOD'] as const;
/** No process gains privileges it did not start with (setuid binaries, file capabilities). */
export const SECURITY_OPTIONS = ['no-new-privileges:true'] as const;

/** Open files one container's processes may hold (soft and hard), by default: what ML stacks use, a wall past that. */
export const CONTAINER_NOFILE_LIMIT = 65_536;
/** `/dev/shm` is this share of the instance's memory limit (it counts against that limit). */
export const SHM_SHARE_OF_MEMORY = 0.5;
/** `/dev/shm` of an instance without a memory limit (one placed before allotments). */
export const SHM_WITHOUT_MEMORY_LIMIT = 1024 ** 3;

/** The container of `spec`; a refusal reads `cannot start image "<image>": <why>`. */
export function planContainer(spec: InstanceSpec, ctx: ContainerContext): ContainerPlan {
  const cannot = (why: string): Error => new Error(`cannot start image "${spec.image}": ${why}`);
  let cmd: string[];
  try {
    cmd = splitArgs(spec.args);
  } catch (err) {
    throw cannot((err as Error).message);
  }
  const hostMode = spec.networkMode === 'host';
  const name = containerNameOf(ctx.namespace, spec.id);
  const labels = instanceLabels(ctx.namespace, spec.id, spec.owner, spec.hostId);

  const env = Object.entries(containerEnv(spec, ctx.host))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`);

  const volumes: VolumePlan[] = [];
  const mounts: MountSpec[] = spec.volumes.map((volume) => {
    if (!volume.path.startsWith('/')) throw cannot(`its volume mount path "${volume.path}" is not absolute`);
    const source =
      volume.kind === 'persistent'
        ? podVolumeNameOf(ctx.namespace, spec.id)
        : networkVolumeNameOf(ctx.namespace, volume.volumeId);
    const volumeLabels: Labels =
      volume.kind === 'persistent'
        ? {
            [LABEL.namespace]: ctx.namespace,
            [LABEL.volume]: 'persistent',
            [LABEL.instance]: spec.id,
            [LABEL.account]: spec.owner.accountId,
          }
        : { [LABEL.namespace]: ctx.namespace, [LABEL.volume]: 'network', [LABEL.volumeId]: volume.volumeId };
    volumes.push({ name: source, labels: volumeLabels });
    return { Type: 'volume', Source: source, Target: volume.path };
  });

  const body: ContainerCreateBody = {
    Image: spec.image,
    Env: env,
    Labels: labels,
    Tty: false,
    OpenStdin: false,
    AttachStdin: false,
    AttachStdout: false,
    AttachStderr: false,
    // Never privileged, no host paths, no added capabilities: nothing a tenant sends reaches the
    // host but through the published ports. A process limit keeps a fork bomb inside its container.
    HostConfig: { RestartPolicy: { Name: 'no' }, PidsLimit: CONTAINER_PIDS_LIMIT },
  };
  // An entrypoint replaces the image's, and then the args are the whole command: the image's CMD
  // is not used even when they are empty (the engine's own rule, as `docker run --entrypoint`).
  // Without one, empty args keep the image's CMD.
  if (spec.entrypoint && spec.entrypoint.length > 0) {
    body.Entrypoint = spec.entrypoint;
    body.Cmd = cmd;
  } else if (cmd.length > 0) body.Cmd = cmd;
  const host = body.HostConfig;

  if (hostMode) {
    host.NetworkMode = 'host';
  } else {
    if (/^[a-zA-Z0-9][a-zA-Z0-9-]{0,62}$/.test(spec.id)) body.Hostname = spec.id;
    if (spec.ports.length > 0) {
      const exposed: Record<string, Record<string, never>> = {};
      const bindings: Record<string, PortBindingSpec[]> = {};
      for (const port of spec.ports) {
        const key = `${port.private}/tcp`;
        exposed[key] = {};
        (bindings[key] ??= []).push({ HostIp: ctx.bindIp, HostPort: String(port.public) });
      }
      body.ExposedPorts = exposed;
      host.PortBindings = bindings;
    }
    if (ctx.network) {
      host.NetworkMode = ctx.network.name;
      const endpoint: EndpointSettings = { Aliases: [...(spec.network?.aliases ?? [])] };
      if (spec.network?.ip && ctx.network.fixedIp) endpoint.IPAMConfig = { IPv4Address: spec.network.ip };
      body.NetworkingConfig = { EndpointsConfig: { [ctx.network.name]: endpoint } };
    }
  }
  if (ctx.hardening) {
    host.CapDrop = [...DROPPED_CAPABILITIES];
    host.SecurityOpt = [...SECURITY_OPTIONS];
  }

  if (spec.vcpus > 0) host.NanoCpus = Math.round(Math.min(spec.vcpus, ctx.engineCpus ?? Infinity) * 1e9);
  if (spec.memoryGb > 0) {
    // No swap on top: the limit is what the instance was sold, and a swapping GPU job is a stuck one.
    host.Memory = Math.round(spec.memoryGb * GiB);
    host.MemorySwap = host.Memory;
  }
  // Bounded, never the engine's 64 MB (ML data loaders need far more) nor unlimited.
  host.ShmSize = host.Memory ? Math.round(host.Memory * SHM_SHARE_OF_MEMORY) : SHM_WITHOUT_MEMORY_LIMIT;
  if (ctx.openFiles !== null) host.Ulimits = [{ Name: 'nofile', Soft: ctx.openFiles, Hard: ctx.openFiles }];
  if (spec.diskGb > 0 && ctx.diskLimit) host.StorageOpt = { size: `${Math.round(spec.diskGb * GiB)}` };
  if (mounts.length > 0) host.Mounts = mounts;
  if (spec.gpuIndices.length > 0 && ctx.host.gpuMode === 'nvidia')
    host.DeviceRequests = [{ Driver: 'nvidia', DeviceIDs: gpuDeviceIds(spec, ctx.host), Capabilities: [['gpu']] }];
  if (ctx.logMaxBytes !== null)
    host.LogConfig = { Type: 'json-file', Config: { 'max-size': String(ctx.logMaxBytes), 'max-file': '2' } };

  const specHash = hashOf(body);
  // The memory limit as a label too: a restart adopts running containers from the listing alone.
  body.Labels = {
    ...labels,
    [LABEL.spec]: specHash,
    [LABEL.memory]: String(host.Memory ?? 0),
    ...(ctx.hardening ? { [LABEL.hardened]: '1' } : {}),
  };
  // A disk the storage driver cannot cap is sampled against this instead (container-sampler.ts).
  if (spec.diskGb > 0 && !ctx.diskLimit) body.Labels[LABEL.disk] = String(Math.round(spec.diskGb * GiB));
  return { name, body, specHash, volumes };
}

/** A stable hash of a JSON value (keys sorted), 32 hex characters. */
function hashOf(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, 32);
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
