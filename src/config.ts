import { readFileSync } from 'node:fs';
import { isAbsolute, join, resolve, dirname } from 'node:path';
import type { StaticDecode } from '@sinclair/typebox';
import { parse as parseYaml } from 'yaml';
import { defaultCatalog, defaultFleet, type Catalog, type Host } from './domain/catalog.js';
import { bareInterpreterWarnings, dockerImageWarnings, parseImages, type ImageSpec } from './config-images.js';
import { fail, isObj, num, type Obj } from './config-values.js';
import { decodeConfig } from './config-decode.js';
import {
  ConfigFileSchema,
  type ConfigFile,
  type JobsSchema,
  type MetricsSchema,
  type NetworkingSchema,
  type PodsSchema,
  type QuotasSchema,
  type RateLimitsSchema,
  type ServerSchema,
} from './config-schema.js';

export type { HealthProbe, ImageSpec } from './config-images.js';
import { resolveRuntime } from './config-runtime.js';
import { resolveSsh, type SshConfig } from './config-ssh.js';
import { resolveProxy, type ProxyConfig } from './config-proxy.js';
import { configuredRuntime } from './runtime/registry.js';
import type { RuntimeConfig } from './runtime/runtime-config.js';
import type { AgentsConfig } from './fleet/agents-config.js';
import type { GraphqlLimits } from './transport/services.js';
import type { AutoscalerConfig } from './serverless/autoscaler-config.js';
import type { ImagePrepullConfig } from './serverless/image-prepull.js';
import type { WebhookConfig } from './serverless/webhook-config.js';
import { checkTrustedProxies, resolveTls } from './config-tls.js';
import type { TlsConfig } from './transport/tls-settings.js';

// Every key, its default, environment variable and meaning: config-schema.ts (docs/configuration.md).
type RateLimitConfig = StaticDecode<typeof RateLimitsSchema>;
type QuotaConfig = StaticDecode<typeof QuotasSchema>;
type JobsHttpConfig = StaticDecode<typeof JobsSchema>;
interface ServerlessConfig {
  webhooks: WebhookConfig;
  autoscaler: AutoscalerConfig;
  flashboot: { maxKeepMs: number; suspendedPricePerGpuHour: number; prepull: ImagePrepullConfig };
}

export interface Config {
  server: Omit<StaticDecode<typeof ServerSchema>, 'publicUrl' | 'publicJobUrl' | 'tls'> & {
    /** HTTPS on the listeners, or null (config-tls.ts). */
    tls: TlsConfig | null;
    /** @default `http://<host>:<port>` (https with `tls`) */
    publicUrl: string;
    /** @default the job listener's, else `publicUrl` */
    publicJobUrl: string;
  };
  /** Absolute. */
  dataDir: string;
  databaseUrl: string | null;
  databaseSchema: string;
  /** `GANTRY_BOOTSTRAP_KEY` only (never in a file): the admin key on a first start. */
  bootstrapKey: string | null;
  secretKey: string | null;
  rateLimits: RateLimitConfig;
  images: Record<string, ImageSpec>;
  catalog: Catalog;
  /**
   * The process runtime's hosts (the demo fleet unless the file declares its own: `fleet` as a
   * list, or `fleet.hosts`); empty with the docker runtime, whose one host is discovered.
   */
  fleet: Host[];
  /** The agents of joined hosts (`gantry agent`, docs/fleet.md): the `fleet` mapping's settings. */
  agents: AgentsConfig;
  networking: StaticDecode<typeof NetworkingSchema>;
  pods: StaticDecode<typeof PodsSchema>;
  serverless: ServerlessConfig;
  jobs: JobsHttpConfig;
  runtime: RuntimeConfig;
  /** The SSH proxy (config-ssh.ts, docs/ssh.md). */
  ssh: SshConfig;
  /** The pod HTTP proxy (config-proxy.ts, docs/proxy.md). */
  proxy: ProxyConfig;
  graphql: GraphqlLimits & { anonymousCatalog: boolean };
  quotas: QuotaConfig;
  /** `GET /metrics` (docs/metrics.md): its token (null: off) and the gauges' refresh. */
  metrics: StaticDecode<typeof MetricsSchema>;
  /** Where the config file was read from, to resolve relative paths. */
  configDir: string;
  /** Keys of the config file Gantry does not know (a typo is reported, not silently ignored). */
  warnings: string[];
}

export interface ConfigSources {
  env: Record<string, string | undefined>;
  /** Flags from the command line, already parsed. */
  flags?: { port?: number; host?: string; dataDir?: string; config?: string };
}

function readFile(path: string): Obj {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    fail(`cannot read config file ${path}: ${(err as Error).message}`);
  }
  const parsed: unknown = path.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  if (parsed === null || parsed === undefined) return {};
  if (!isObj(parsed)) fail(`${path} must hold a mapping at the top level`);
  return parsed;
}

/**
 * A GPU type's per-GPU allotment (`vcpusPerGpu`, `memoryGbPerGpu`), when given, is a whole number
 * from 1; its spot prices (`secureSpotPrice`, `communitySpotPrice`) a price of 0 or more.
 */
function checkPerGpuAllotment(type: unknown, i: number): void {
  if (!isObj(type)) return;
  for (const key of ['vcpusPerGpu', 'memoryGbPerGpu'] as const) {
    const v = type[key];
    if (v !== undefined && !(typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 65_536))
      fail(`catalog.gpuTypes[${i}].${key} must be a whole number from 1 to 65536 (got ${JSON.stringify(v)})`);
  }
  for (const key of ['secureSpotPrice', 'communitySpotPrice'] as const) {
    const v = type[key];
    if (v !== undefined && !(typeof v === 'number' && Number.isFinite(v) && v >= 0))
      fail(
        `catalog.gpuTypes[${i}].${key} must be a price of 0 or more, USD per GPU per hour (got ${JSON.stringify(v)})`,
      );
  }
}

function parseCatalog(raw: unknown): Catalog {
  const defaults = defaultCatalog();
  if (raw === undefined) return defaults;
  if (!isObj(raw)) fail('catalog must be a mapping');
  if (Array.isArray(raw.gpuTypes)) raw.gpuTypes.forEach(checkPerGpuAllotment);
  return {
    gpuTypes: Array.isArray(raw.gpuTypes) ? (raw.gpuTypes as Catalog['gpuTypes']) : defaults.gpuTypes,
    pools: Array.isArray(raw.pools) ? (raw.pools as Catalog['pools']) : defaults.pools,
    cpuFlavors: Array.isArray(raw.cpuFlavors) ? (raw.cpuFlavors as Catalog['cpuFlavors']) : defaults.cpuFlavors,
    dataCenters: Array.isArray(raw.dataCenters) ? (raw.dataCenters as Catalog['dataCenters']) : defaults.dataCenters,
  };
}

/**
 * The file's short forms as their mappings, so the schema sees one shape: `runtime: docker` is
 * `runtime: { kind: docker }`, and a `fleet` list is `fleet: { hosts: [...] }`.
 */
function normalise(file: Obj): Obj {
  const out: Obj = { ...file };
  const runtime = file.runtime;
  if (runtime !== undefined && runtime !== null && typeof runtime !== 'string' && !isObj(runtime))
    fail('runtime must be "process", "docker", "fleet", or a mapping { kind, process, docker }');
  if (typeof runtime === 'string') out.runtime = { kind: runtime };
  if (Array.isArray(file.fleet)) out.fleet = { hosts: file.fleet };
  return out;
}

/** A host's CUDA version as written ("12.4", or a number in YAML); absent → unknown. */
function cudaVersionOf(v: unknown, path: string): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'string' || typeof v === 'number') return String(v);
  return fail(`${path} must be a version like "12.4"`);
}

function parseFleet(raw: unknown, catalog: Catalog): Host[] {
  if (raw === undefined) return defaultFleet();
  if (!Array.isArray(raw)) fail('fleet must be a list of hosts (or fleet.hosts, when fleet is a mapping)');
  const ids = new Set<string>();
  return raw.map((h, i) => {
    if (!isObj(h)) fail(`fleet[${i}] must be a mapping`);
    const id = typeof h.id === 'string' ? h.id : fail(`fleet[${i}].id is required`);
    if (ids.has(id)) fail(`fleet host id "${id}" appears twice`);
    ids.add(id);
    const dataCenterId =
      typeof h.dataCenterId === 'string' ? h.dataCenterId : fail(`fleet[${i}].dataCenterId is required`);
    if (!catalog.dataCenters.some((d) => d.id === dataCenterId))
      fail(`fleet[${i}].dataCenterId "${dataCenterId}" is not in the catalog`);
    const gpuTypeId = typeof h.gpuTypeId === 'string' ? h.gpuTypeId : null;
    if (gpuTypeId && !catalog.gpuTypes.some((g) => g.id === gpuTypeId))
      fail(`fleet[${i}].gpuTypeId "${gpuTypeId}" is not in the catalog`);
    const range = Array.isArray(h.portRange) ? h.portRange : [30000 + i * 1000, 30000 + i * 1000 + 999];
    return {
      id,
      dataCenterId,
      cloud: h.cloud === 'COMMUNITY' ? 'COMMUNITY' : 'SECURE',
      cudaVersion: cudaVersionOf(h.cudaVersion, `fleet[${i}].cudaVersion`),
      gpuTypeId,
      gpuCount: gpuTypeId ? num(h.gpuCount, `fleet[${i}].gpuCount`, 1) : 0,
      cpuFlavors: Array.isArray(h.cpuFlavors) ? h.cpuFlavors.map(String) : [],
      vcpus: num(h.vcpus, `fleet[${i}].vcpus`, 32),
      memoryGb: num(h.memoryGb, `fleet[${i}].memoryGb`, 128),
      diskGb: num(h.diskGb, `fleet[${i}].diskGb`, 1000),
      portRange: [Number(range[0]), Number(range[1])],
      publicIp: typeof h.publicIp === 'string' ? h.publicIp : '127.0.0.1',
    } satisfies Host;
  });
}

/** Compile environment, flags and the optional config file into a typed Config, once, at the edge. */
export function loadConfig({ env, flags = {} }: ConfigSources): Config {
  const configPath = flags.config ?? env.GANTRY_CONFIG;
  const file: Obj = configPath ? readFile(configPath) : {};
  const configDir = configPath ? dirname(resolve(configPath)) : process.cwd();
  const flagged = [
    { path: ['server', 'port'], value: flags.port },
    { path: ['server', 'host'], value: flags.host },
    { path: ['dataDir'], value: flags.dataDir },
  ];
  const decoded = decodeConfig(ConfigFileSchema, normalise(file), env, flagged);
  const { server, fleet: agentsSection, ...sections } = decoded.value as ConfigFile;
  const dataDir = isAbsolute(sections.dataDir) ? sections.dataDir : resolve(sections.dataDir);
  const publicHost = server.host === '0.0.0.0' || server.host === '::' ? '127.0.0.1' : server.host;
  const tls = resolveTls(server.tls, configDir);
  const trustedProxies = checkTrustedProxies(server.trustedProxies);
  const scheme = tls ? 'https' : 'http';
  const publicUrl = (server.publicUrl ?? `${scheme}://${publicHost}:${server.port}`).replace(/\/+$/, '');
  const publicJobUrl = (
    server.publicJobUrl ?? (server.jobPort !== null ? `${scheme}://${publicHost}:${server.jobPort}` : publicUrl)
  ).replace(/\/+$/, '');
  const { databaseUrl, databaseSchema } = sections;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl))
    fail(`${decoded.fromEnv.get('databaseUrl') ?? 'databaseUrl'} must be a postgres:// URL`);
  const catalog = parseCatalog(sections.catalog);
  const runtime = resolveRuntime(sections.runtime, {
    catalog,
    databaseUrl,
    databaseSchema,
    dataDir,
    fromEnv: decoded.fromEnv,
  });
  // The process runtime's demo fleet is declared; the Docker runtime's one host is discovered.
  const runtimeModule = configuredRuntime({ runtime });
  if (runtimeModule.hostSource === 'discovered' && agentsSection.hosts !== undefined)
    fail(
      `fleet declares the hosts of the process runtime; with runtime ${runtime.kind} the host is discovered from the engine (remove fleet, or fleet.hosts; ${runtimeModule.configSection?.path ?? `runtime.${runtime.kind}`} sets hostId, dataCenterId, cloud, publicIp and portRange)`,
    );
  const { hosts, ...agents } = agentsSection;
  if (agents.heartbeatTimeoutMs <= agents.heartbeatMs)
    fail(
      `fleet.heartbeatTimeoutMs (${agents.heartbeatTimeoutMs}) must be longer than fleet.heartbeatMs (${agents.heartbeatMs}): every host would flap between available and unavailable`,
    );
  const images = parseImages(sections.images, { commandRequired: runtimeModule.imagesAreCommands });
  for (const spec of Object.values(images)) if (spec.cwd && !isAbsolute(spec.cwd)) spec.cwd = join(configDir, spec.cwd);
  return {
    ...sections,
    server: { ...server, tls, trustedProxies, publicUrl, publicJobUrl },
    dataDir,
    bootstrapKey: env.GANTRY_BOOTSTRAP_KEY ?? null,
    images,
    catalog,
    fleet: runtimeModule.hostSource === 'declared' ? parseFleet(hosts, catalog) : [],
    agents,
    runtime,
    ssh: resolveSsh(sections.ssh, { port: server.port, publicUrl }),
    proxy: resolveProxy(sections.proxy, { port: server.port, publicUrl }),
    configDir,
    warnings: [
      ...decoded.warnings,
      ...(runtimeModule.imagesAreCommands ? bareInterpreterWarnings(images) : dockerImageWarnings(images)),
    ],
  };
}
