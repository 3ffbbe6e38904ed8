/**
 * The pod rules that JSON Schema cannot express (spec 2.2 rules 1-7, 2.3, 2.5): cross-field
 * checks, template resolution and the PATCH mount rules. Pure functions over plain data; a
 * broken rule throws the catalogued ApiError.
 */
import type { Catalog, Cloud } from '../domain/catalog.js';
import { ApiError, validationFailed } from '../domain/errors.js';
import { checkMountPaths, type Mounts } from '../domain/mounts.js';
import { cudaRequestOf, gpuMinimumsOf, type CreateGpuInput } from './pod-gpu-request.js';
import { resolveBid, type BidInput } from './pod-bid.js';

/** The create body after schema validation (spec 2.2); `interruptible` and `bidPerGpu` ask for a spot pod (pod-bid.ts). */
export interface CreatePodInput extends BidInput {
  name: string;
  image?: string;
  args?: string;
  disk?: number;
  ports?: string[];
  env?: Record<string, string>;
  registry?: string | null;
  templateId?: string;
  mounts?: Mounts;
  /** `id` and `count` (the seed), and upstream's v2 host constraints (pod-gpu-request.ts). */
  gpu?: CreateGpuInput;
  cpu?: { id: string; vcpuCount: number };
  /**
   * GPU pods: the least vCPUs and GB of memory the pod accepts, in all (GraphQL `minVcpuCount`,
   * `minMemoryInGb`; REST v1's per-GPU minimums × `gpuCount`). It gets its GPU type's allotment,
   * at least this; a host whose share of the GPUs is less does not fit. Ignored on CPU pods.
   */
  minVcpuCount?: number;
  minMemoryInGb?: number;
  cloud?: Cloud;
  dataCenterIds?: string[];
  allowedCudaVersions?: string[];
  minCudaVersion?: string;
  globalNetworking?: boolean;
  startSsh?: boolean;
  startJupyter?: boolean;
  /** Gantry extension (runpodctl's `--stop-after`): when the pod stops itself, RFC 3339 (domain/pod-deadline.ts). */
  stopAfter?: string;
  /** Gantry extension (runpodctl's `--terminate-after`): when the pod terminates itself, RFC 3339. */
  terminateAfter?: string;
  /**
   * GraphQL `deployCost`: the most the pod may cost, USD per hour (for a cluster's members, all of
   * them together); a placement above it is refused as no capacity is (400 NO_CAPACITY).
   */
  deployCost?: number;
}

/** The PATCH body after schema validation: readable config only (no CUDA fields, no startSsh/startJupyter). */
export interface PatchPodInput {
  name?: string;
  image?: string;
  args?: string;
  disk?: number;
  ports?: string[];
  env?: Record<string, string>;
  registry?: string | null;
  locked?: boolean;
  /** Fixed at create: accepted only when equal to the pod's own (400 GLOBAL_NETWORKING_FIXED otherwise). */
  globalNetworking?: boolean;
  mounts?: Mounts;
  templateId?: string;
}

/** The template fields a pod takes over at create (spec 2.2 rule 4). */
export interface TemplateDefaults {
  image: string;
  args: string;
  disk: number;
  ports: string[];
  env: Record<string, string>;
  registry: string | null;
  /** 0 = the template has no persistent volume */
  volumeInGb: number;
  volumeMountPath: string | null;
  startSsh: boolean;
  startJupyter: boolean;
  allowedCudaVersions: string[];
}

type Compute =
  | { kind: 'gpu'; gpuTypeId: string; count: number; minVcpus: number; minMemoryGb: number }
  | { kind: 'cpu'; flavorId: string; vcpuCount: number; memoryGb: number };

/** Everything a pod is created from, once body, template and catalog have been combined. */
export interface PodSettings {
  name: string;
  image: string;
  args: string;
  disk: number;
  ports: string[];
  env: Record<string, string>;
  registry: string | null;
  mounts: Mounts;
  compute: Compute;
  cloud: Cloud;
  dataCenterIds: string[];
  allowedCudaVersions: string[];
  minCudaVersion: string | null;
  globalNetworking: boolean;
  startSsh: boolean;
  startJupyter: boolean;
  /** An interruptible pod's bid, USD per GPU per hour (pod-bid.ts); null for an on-demand pod. */
  bidPerGpu: number | null;
}

/** @default 20 GB when neither the body nor the template gives a container disk */
const DEFAULT_DISK_GB = 20;

/** Rule 1: exactly one of gpu or cpu. */
function checkGpuOrCpu(body: Pick<CreatePodInput, 'gpu' | 'cpu'>): void {
  if (body.gpu && body.cpu) throw new ApiError('GPU_OR_CPU_REQUIRED', 'Set exactly one of "gpu" or "cpu", not both.');
  if (!body.gpu && !body.cpu)
    throw new ApiError('GPU_OR_CPU_REQUIRED', 'Set exactly one of "gpu" (GPU pod) or "cpu" (CPU pod).');
}

/** 2.3 and rule 2: at most one mount kind; no persistent mount on a CPU pod; no mount over the container's system folders. */
function checkMounts(mounts: Mounts, kind: 'gpu' | 'cpu'): void {
  if (mounts.persistent && mounts.network)
    throw new ApiError('MOUNT_CONFLICT', 'Set at most one of "mounts.persistent" or "mounts.network".');
  if (mounts.persistent && kind === 'cpu')
    throw new ApiError(
      'MOUNT_RULE',
      'CPU pods support network volumes only; "mounts.persistent" is not allowed with "cpu".',
    );
  checkMountPaths(mounts);
}

/** `<port>/<protocol>` with a port in 1-65535. */
export function checkPorts(ports: string[]): void {
  const bad = ports.filter((p) => {
    const m = /^(\d{1,5})\/([a-z]+)$/.exec(p);
    return !m || Number(m[1]) < 1 || Number(m[1]) > 65535;
  });
  if (bad.length)
    throw new ApiError(
      'BAD_REQUEST',
      `Ports must look like "<port>/<protocol>" with a port from 1 to 65535: ${bad.map((b) => `"${b}"`).join(', ')}.`,
    );
  const seen = new Set<number>();
  for (const p of ports) {
    const n = Number(p.split('/')[0]);
    if (seen.has(n)) throw new ApiError('BAD_REQUEST', `Port ${n} is listed twice in "ports".`);
    seen.add(n);
  }
}

/** The most a GPU pod may ask for at least, in all: no host has more (fleet hosts report at most 4096 vCPUs). */
const MAX_MIN_VCPUS = 4096;
const MAX_MIN_MEMORY_GB = 65_536;

/** A GPU pod's minimum vCPUs or memory: a whole number from 0 (none) to `max`. */
function minimumOf(value: number | undefined, field: string, max: number): number {
  if (value === undefined) return 0;
  if (!Number.isInteger(value) || value < 0 || value > max)
    throw new ApiError('BAD_REQUEST', `${field} must be a whole number from 0 to ${max} (got ${value}).`);
  return value;
}

/** 2.4 / 2.5: the GPU type or CPU flavor exists; CPU memory = vcpuCount × the flavor's RAM multiplier. */
function resolveCompute(
  body: Pick<CreatePodInput, 'gpu' | 'cpu' | 'minVcpuCount' | 'minMemoryInGb'>,
  catalog: Catalog,
): Compute {
  if (body.gpu) {
    const type = catalog.gpuTypes.find((g) => g.id === body.gpu!.id);
    if (!type)
      throw new ApiError(
        'UNKNOWN_REFERENCE',
        `Unknown GPU type "${body.gpu.id}"; GET /v2/catalog/gpus lists the valid ids.`,
      );
    const least = gpuMinimumsOf(body.gpu, {
      vcpus: minimumOf(body.minVcpuCount, 'minVcpuCount', MAX_MIN_VCPUS),
      memoryGb: minimumOf(body.minMemoryInGb, 'minMemoryInGb', MAX_MIN_MEMORY_GB),
    });
    return {
      kind: 'gpu',
      gpuTypeId: type.id,
      count: body.gpu.count ?? 1,
      minVcpus: least.vcpus,
      minMemoryGb: least.memoryGb,
    };
  }
  const cpu = body.cpu!;
  const flavor = catalog.cpuFlavors.find((f) => f.id === cpu.id);
  if (!flavor)
    throw new ApiError(
      'UNKNOWN_REFERENCE',
      `Unknown CPU flavor "${cpu.id}"; GET /v2/catalog/cpus lists the valid ids.`,
    );
  const n = cpu.vcpuCount;
  const powerOfTwo = Number.isInteger(n) && n >= 2 && (n & (n - 1)) === 0;
  if (!powerOfTwo || !flavor.vcpuOptions.includes(n))
    throw new ApiError(
      'BAD_REQUEST',
      `cpu.vcpuCount ${n} is not valid for flavor "${flavor.id}"; valid options: ${flavor.vcpuOptions.join(', ')}.`,
    );
  return { kind: 'cpu', flavorId: flavor.id, vcpuCount: n, memoryGb: n * flavor.ramMultiplier };
}

const hasMount = (m: Mounts | undefined): m is Mounts =>
  m !== undefined && (m.persistent !== undefined || m.network !== undefined);

/**
 * Combines the create body with the template (rule 4) and the catalog into the pod's settings.
 * Body fields win, env merges per key (body wins), either CUDA field in the body replaces the
 * template's constraint, and a CPU pod takes neither the template's CUDA constraint nor its
 * persistent mount.
 */
export function resolveCreate(body: CreatePodInput, template: TemplateDefaults | null, catalog: Catalog): PodSettings {
  checkGpuOrCpu(body);
  const cuda = cudaRequestOf(body);
  const compute = resolveCompute(body, catalog);
  const image = body.image ?? template?.image;
  if (image === undefined) throw validationFailed(['image: is required unless templateId is set']);

  let mounts: Mounts = {};
  if (hasMount(body.mounts)) {
    // an empty network list at create means "no network mount"
    if (body.mounts.persistent) mounts.persistent = body.mounts.persistent;
    if (body.mounts.network?.length) mounts.network = body.mounts.network;
  } else if (template && template.volumeInGb > 0 && compute.kind === 'gpu') {
    mounts = { persistent: { size: template.volumeInGb, path: template.volumeMountPath ?? '/workspace' } };
  }
  checkMounts(mounts, compute.kind);

  const allowedCudaVersions =
    compute.kind === 'cpu' ? [] : cuda.given ? cuda.allowedCudaVersions : (template?.allowedCudaVersions ?? []);
  const ports = body.ports ?? template?.ports ?? [];
  checkPorts(ports);

  const cloud = body.cloud ?? 'SECURE';
  return {
    name: body.name,
    image,
    args: body.args ?? template?.args ?? '',
    disk: body.disk ?? template?.disk ?? DEFAULT_DISK_GB,
    ports,
    env: { ...(template?.env ?? {}), ...(body.env ?? {}) },
    registry: body.registry !== undefined ? body.registry : (template?.registry ?? null),
    mounts,
    compute,
    cloud,
    dataCenterIds: body.dataCenterIds ?? [],
    allowedCudaVersions,
    minCudaVersion: compute.kind === 'gpu' ? cuda.minCudaVersion : null,
    globalNetworking: body.globalNetworking ?? false,
    startSsh: body.startSsh ?? template?.startSsh ?? false,
    startJupyter: body.startJupyter ?? template?.startJupyter ?? false,
    bidPerGpu: resolveBid(body, compute, cloud, catalog),
  };
}

/**
 * Rules 5 and 6: env injected by startSsh/startJupyter, kept apart from the user's env so that
 * GET never returns it. A variable the request (or template) already sets is not overridden.
 */
export function injectedEnv(
  settings: Pick<PodSettings, 'env' | 'startSsh' | 'startJupyter'>,
  sshKeys: readonly string[],
  generatePassword: () => string,
): Record<string, string> {
  const hidden: Record<string, string> = {};
  if (settings.startSsh && sshKeys.length > 0 && settings.env.PUBLIC_KEY === undefined)
    hidden.PUBLIC_KEY = sshKeys.join('\n');
  if (settings.startJupyter && settings.env.JUPYTER_PASSWORD === undefined)
    hidden.JUPYTER_PASSWORD = generatePassword();
  return hidden;
}

/**
 * 2.3 PATCH semantics: omitted or `{}` leaves the mount unchanged; `network: []` is refused; the
 * kind is fixed at create; a network mount's volumeId is immutable; `path` may change.
 */
export function applyMountPatch(current: Mounts, patch: Mounts | undefined): Mounts {
  if (patch === undefined || (patch.persistent === undefined && patch.network === undefined)) return current;
  if (patch.persistent && patch.network)
    throw new ApiError('MOUNT_CONFLICT', 'Set at most one of "mounts.persistent" or "mounts.network".');
  if (patch.network !== undefined) {
    if (patch.network.length === 0)
      throw new ApiError(
        'MOUNT_RULE',
        '"mounts.network" cannot be emptied; a pod keeps the mount kind it was created with.',
      );
    if (!current.network?.length)
      throw new ApiError(
        'MOUNT_RULE',
        `The pod was created ${current.persistent ? 'with a persistent mount' : 'without a mount'}; a network mount cannot be added.`,
      );
    const next = patch.network[0]!;
    const was = current.network[0]!;
    if (next.volumeId !== was.volumeId)
      throw new ApiError(
        'MOUNT_RULE',
        `The network volume of a pod cannot change (it is "${was.volumeId}"); only its "path" can.`,
      );
    const mounts = { network: [{ volumeId: was.volumeId, path: next.path }] };
    checkMountPaths(mounts);
    return mounts;
  }
  const next = patch.persistent!;
  if (!current.persistent)
    throw new ApiError(
      'MOUNT_RULE',
      `The pod was created ${current.network?.length ? 'with a network mount' : 'without a mount'}; a persistent mount cannot be added.`,
    );
  if (next.size !== current.persistent.size)
    throw new ApiError(
      'MOUNT_RULE',
      `The persistent mount size cannot change (it is ${current.persistent.size} GB); only its "path" can.`,
    );
  const mounts = { persistent: { size: current.persistent.size, path: next.path } };
  checkMountPaths(mounts);
  return mounts;
}

/** Fields of a PATCH that the running instance sees: changing them restarts a RUNNING pod. */
export const RESTARTING_FIELDS = ['image', 'args', 'env', 'ports', 'disk', 'mounts', 'registry'] as const;
