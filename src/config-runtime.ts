/** The `runtime` section of the config: which runtime runs instances, and each runtime's settings. */
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import type { Catalog, Cloud } from './domain/catalog.js';
import { parseRegistryPattern, type RegistryPolicyConfig } from './domain/registry-policy.js';
import { bool, fail, isObj, num, oneOf, type Obj } from './config-values.js';

/** How instances run. */
export interface RuntimeConfig {
  /**
   * Which runtime runs pods and workers: `process` (local child processes, the demo fleet) or
   * `docker` (containers on a Docker Engine, on the one host discovered from it) or `fleet`
   * (containers on the hosts whose `gantry agent` joined: docs/fleet.md). The config's
   * `runtime: docker` is the short form of `runtime: { kind: docker }`. `GANTRY_RUNTIME`. @default "process"
   */
  kind: 'process' | 'docker' | 'fleet';
  process: {
    /**
     * Let the process runtime serve more than one account. It isolates nothing (an instance is a
     * process of the server's own user, on the host's network), so by default the server refuses
     * to start with a second account, and refuses to create one, while it uses this runtime.
     * `GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT=true`. @default false
     */
    allowMultipleAccounts: boolean;
    /**
     * How long after the server died without closing (kill -9, a crash) its process instances are
     * stopped by its watchdog; a server started again on the same data dir within it stops them
     * at once. `GANTRY_PROCESS_ORPHAN_GRACE_MS`. @default 30000
     */
    orphanGraceMs: number;
  };
  docker: DockerRuntimeConfig;
  /**
   * How long an instance the runtime found at server start (`attach()`) may stay unclaimed by a
   * pod or a launched worker before it is removed as an orphan. `GANTRY_RUNTIME_ORPHAN_GRACE_MS`.
   * @default 60000
   */
  orphanGraceMs: number;
  /**
   * How often the runtime's one shared sampler measures its live instances' utilisation (CPU,
   * memory, GPUs: docs/utilization.md); pods show the last sample. At least 100.
   * `GANTRY_RUNTIME_STATS_INTERVAL_MS`. @default 5000
   */
  statsIntervalMs: number;
}

/** The Docker runtime: the engine, and what of its host is configured rather than discovered. */
export interface DockerRuntimeConfig {
  /** The engine: `unix:///path/docker.sock` or `tcp://host:port`. `DOCKER_HOST`. @default "unix:///var/run/docker.sock" */
  host: string;
  /**
   * Names and labels (`gantry.namespace`) everything this installation creates on the engine, so
   * installations sharing one engine never touch each other's. Must stay the same across restarts
   * (containers are adopted by it). @default 12 hex digits of the SHA-256 of the database URL and schema, or of the data dir
   */
  namespace: string;
  /** The host's id in the catalog and on pods. @default the engine's name (its hostname) */
  hostId: string | null;
  /** @default the catalog's first data center */
  dataCenterId: string | null;
  /** @default "SECURE" */
  cloud: Cloud;
  /** The address clients reach published ports at. @default bindIp when it is one address, else the engine's TCP host, else 127.0.0.1 */
  publicIp: string | null;
  /** The address published ports bind on. @default "0.0.0.0" */
  bindIp: string;
  /** Host ports handed to pods' and workers' ports, inclusive. @default [20000, 29999] */
  portRange: [number, number];
  /** Disk to offer, GB. @default the free space under the engine's data root, at start */
  diskGb: number | null;
  /**
   * How GPUs reach containers: `nvidia` (device requests; needs the NVIDIA Container Toolkit),
   * `env-only` (only NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES), or `auto`: `nvidia` when the
   * engine has the nvidia runtime or CDI GPU devices. @default "auto"
   */
  gpuMode: 'auto' | 'nvidia' | 'env-only';
  /** CPU flavors the host serves. @default every catalog flavor on a host without GPUs, none on a GPU host */
  cpuFlavors: string[] | null;
  /** The nvidia-smi to run: a path, or a name found on PATH. @default "nvidia-smi" */
  nvidiaSmi: string;
  /**
   * Which registries tenants' images may be pulled from (domain/registry-policy.ts): by default any
   * public one, and none on loopback, private or other non-public addresses (the engine would reach
   * them from the host's network). `allow` (also `GANTRY_DOCKER_REGISTRIES_ALLOW`, comma-separated)
   * lists registries allowed even there; `only: true` allows nothing else.
   * @default { allow: [], only: false, private: "refuse" }
   */
  registries: RegistryPolicyConfig;
  /**
   * Let the Docker runtime serve more than one account while its serverless workers use the host's
   * network (they do when the job URL they are given is on loopback): each worker then reaches
   * everything listening on the host's loopback, so by default the server refuses to start with a
   * second account, and refuses to create one, in that state. Serving the job API on a non-loopback
   * address lifts the rule without this. `GANTRY_DOCKER_HOST_NETWORK_MULTI_ACCOUNT=true`. @default false
   */
  allowMultipleAccountsOnHostNetwork: boolean;
}

/** Where the Docker runtime finds its engine when neither DOCKER_HOST nor runtime.docker.host says. */
export const DEFAULT_DOCKER_HOST = 'unix:///var/run/docker.sock';

/**
 * The installation's default namespace: a hash of what identifies its data, so it is stable across
 * restarts and replicas, and differs between installations. A PostgreSQL URL counts without its
 * credentials (a rotated password must not orphan every container).
 */
export function defaultNamespace(databaseUrl: string | null, databaseSchema: string, dataDir: string): string {
  let identity = `dir:${dataDir}`;
  if (databaseUrl) {
    const url = new URL(databaseUrl);
    identity = `pg:${url.hostname}:${url.port || '5432'}${url.pathname}#${databaseSchema}`;
  }
  return createHash('sha256').update(identity).digest('hex').slice(0, 12);
}

const str = (v: unknown, field: string): string | null => {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || v.trim() === '') fail(`${field} must be a non-empty string`);
  return v;
};

function registries(v: unknown, envAllow: string | undefined): RegistryPolicyConfig {
  if (v !== undefined && v !== null && !isObj(v)) fail('runtime.docker.registries must be a mapping { allow, only, private }');
  const section: Obj = isObj(v) ? v : {};
  let allow: string[] = [];
  const field = envAllow !== undefined ? 'GANTRY_DOCKER_REGISTRIES_ALLOW' : 'runtime.docker.registries.allow';
  if (envAllow !== undefined) allow = envAllow.split(',').map((e) => e.trim()).filter((e) => e !== '');
  else if (section.allow !== undefined && section.allow !== null) {
    if (!Array.isArray(section.allow) || !section.allow.every((e) => typeof e === 'string')) fail(`${field} must be a list of registries (host, host:port, [ipv6]:port or *.domain)`);
    allow = section.allow as string[];
  }
  for (const entry of allow) {
    const pattern = parseRegistryPattern(entry);
    if (typeof pattern === 'string') fail(`${field}: ${pattern}`);
  }
  const only = bool(section.only, 'runtime.docker.registries.only', false);
  if (only && allow.length === 0) fail(`runtime.docker.registries.only needs registries in ${field}: with none, no image could be pulled`);
  return { allow, only, private: oneOf(section.private, 'runtime.docker.registries.private', ['refuse', 'allow'] as const, 'refuse') };
}

function portRange(v: unknown): [number, number] {
  if (v === undefined || v === null) return [20000, 29999];
  const ok = Array.isArray(v) && v.length === 2 && v.every((p) => Number.isInteger(p) && (p as number) >= 1 && (p as number) <= 65535) && (v[0] as number) <= (v[1] as number);
  if (!ok) fail('runtime.docker.portRange must be [first, last]: two ports from 1 to 65535, first <= last');
  return [v[0] as number, v[1] as number];
}

export interface RuntimeContext {
  catalog: Catalog;
  databaseUrl: string | null;
  databaseSchema: string;
  dataDir: string;
}

/** `runtime: process | docker`, or `runtime: { kind, process: {…}, docker: {…} }`; GANTRY_RUNTIME and DOCKER_HOST override the file. */
export function parseRuntime(raw: unknown, env: Record<string, string | undefined>, ctx: RuntimeContext): RuntimeConfig {
  if (raw !== undefined && raw !== null && typeof raw !== 'string' && !isObj(raw)) fail('runtime must be "process", "docker", "fleet", or a mapping { kind, process, docker }');
  const section: Obj = typeof raw === 'string' ? { kind: raw } : isObj(raw) ? raw : {};
  const kind = oneOf(env.GANTRY_RUNTIME || section.kind, env.GANTRY_RUNTIME ? 'GANTRY_RUNTIME' : 'runtime.kind', ['process', 'docker', 'fleet'] as const, 'process');
  if (section.process !== undefined && !isObj(section.process)) fail('runtime.process must be a mapping');
  if (section.docker !== undefined && !isObj(section.docker)) fail('runtime.docker must be a mapping');
  const processRuntime: Obj = isObj(section.process) ? section.process : {};
  const docker: Obj = isObj(section.docker) ? section.docker : {};
  const host = env.DOCKER_HOST || str(docker.host, 'runtime.docker.host') || DEFAULT_DOCKER_HOST;
  // Checked only when used: a DOCKER_HOST the process runtime never reads must not stop it.
  if (kind === 'docker' && !/^unix:\/\/\/./.test(host) && !/^(tcp|http):\/\/(\[[0-9a-fA-F:.]+\]|[^:/\s]+)(:\d+)?\/?$/.test(host))
    fail(`${env.DOCKER_HOST ? 'DOCKER_HOST' : 'runtime.docker.host'} "${host}" must be unix:///path/docker.sock or tcp://host:port (TLS and ssh:// are not supported)`);
  const namespace = str(docker.namespace, 'runtime.docker.namespace') ?? defaultNamespace(ctx.databaseUrl, ctx.databaseSchema, ctx.dataDir);
  if (!/^[a-z0-9][a-z0-9-]{0,31}$/.test(namespace)) fail('runtime.docker.namespace must be 1 to 32 lowercase letters, digits and dashes, starting with a letter or digit');
  const dataCenterId = str(docker.dataCenterId, 'runtime.docker.dataCenterId');
  if (dataCenterId !== null && !ctx.catalog.dataCenters.some((d) => d.id === dataCenterId)) fail(`runtime.docker.dataCenterId "${dataCenterId}" is not in the catalog`);
  const bindIp = str(docker.bindIp, 'runtime.docker.bindIp') ?? '0.0.0.0';
  if (isIP(bindIp) === 0) fail(`runtime.docker.bindIp "${bindIp}" must be an IP address`);
  let cpuFlavors: string[] | null = null;
  if (docker.cpuFlavors !== undefined && docker.cpuFlavors !== null) {
    const flavors = docker.cpuFlavors;
    if (!Array.isArray(flavors) || !flavors.every((f) => typeof f === 'string')) fail('runtime.docker.cpuFlavors must be a list of CPU flavor ids');
    const unknown = flavors.find((f) => !ctx.catalog.cpuFlavors.some((c) => c.id === f));
    if (unknown !== undefined) fail(`runtime.docker.cpuFlavors names "${unknown}", which is not in the catalog`);
    cpuFlavors = flavors as string[];
  }
  return {
    kind,
    process: {
      allowMultipleAccounts: bool(env.GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT ?? processRuntime.allowMultipleAccounts, 'runtime.process.allowMultipleAccounts', false),
      orphanGraceMs: num(env.GANTRY_PROCESS_ORPHAN_GRACE_MS ?? processRuntime.orphanGraceMs, 'runtime.process.orphanGraceMs', 30_000),
    },
    docker: {
      host,
      namespace,
      hostId: str(docker.hostId, 'runtime.docker.hostId'),
      dataCenterId,
      cloud: oneOf(docker.cloud, 'runtime.docker.cloud', ['SECURE', 'COMMUNITY'] as const, 'SECURE'),
      publicIp: str(docker.publicIp, 'runtime.docker.publicIp'),
      bindIp,
      portRange: portRange(docker.portRange),
      diskGb: docker.diskGb === undefined || docker.diskGb === null ? null : num(docker.diskGb, 'runtime.docker.diskGb', 0),
      gpuMode: oneOf(docker.gpuMode, 'runtime.docker.gpuMode', ['auto', 'nvidia', 'env-only'] as const, 'auto'),
      cpuFlavors,
      nvidiaSmi: str(docker.nvidiaSmi, 'runtime.docker.nvidiaSmi') ?? 'nvidia-smi',
      registries: registries(docker.registries, env.GANTRY_DOCKER_REGISTRIES_ALLOW || undefined),
      allowMultipleAccountsOnHostNetwork: bool(
        env.GANTRY_DOCKER_HOST_NETWORK_MULTI_ACCOUNT ?? docker.allowMultipleAccountsOnHostNetwork,
        'runtime.docker.allowMultipleAccountsOnHostNetwork',
        false,
      ),
    },
    orphanGraceMs: num(env.GANTRY_RUNTIME_ORPHAN_GRACE_MS ?? section.orphanGraceMs, 'runtime.orphanGraceMs', 60_000),
    statsIntervalMs: statsInterval(env.GANTRY_RUNTIME_STATS_INTERVAL_MS ?? section.statsIntervalMs),
  };
}

function statsInterval(v: unknown): number {
  const ms = num(v, 'runtime.statsIntervalMs', 5_000);
  if (ms < 100) fail('runtime.statsIntervalMs must be at least 100 (ms): each turn reads every live instance');
  return ms;
}

/** The keys of the runtime section (config.ts reports others as unknown). */
export const RUNTIME_KEYS = {
  runtime: ['kind', 'process', 'docker', 'orphanGraceMs', 'statsIntervalMs'],
  'runtime.process': ['allowMultipleAccounts', 'orphanGraceMs'],
  'runtime.docker': ['host', 'namespace', 'hostId', 'dataCenterId', 'cloud', 'publicIp', 'bindIp', 'portRange', 'diskGb', 'gpuMode', 'cpuFlavors', 'nvidiaSmi', 'registries', 'allowMultipleAccountsOnHostNetwork'],
  'runtime.docker.registries': ['allow', 'only', 'private'],
} as const;
