import { readFileSync } from 'node:fs';
import { isAbsolute, join, resolve, dirname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { defaultCatalog, defaultFleet, type Catalog, type Host } from './domain/catalog.js';
import { bareInterpreterWarnings, dockerImageWarnings, parseImages, type ImageSpec } from './config-images.js';
import { fail, isObj, num, oneOf, type Obj } from './config-values.js';

export type { HealthProbe, ImageSpec } from './config-images.js';
export type { DockerRuntimeConfig, RuntimeConfig } from './config-runtime.js';
import { parseRuntime, RUNTIME_KEYS, type RuntimeConfig } from './config-runtime.js';
import { parseSsh, SSH_KEYS, type SshConfig } from './config-ssh.js';
export type { SshConfig } from './config-ssh.js';

export interface RateLimitConfig {
  minute: number;
  hour: number;
  day: number;
}

export interface Config {
  server: {
    host: string;
    port: number;
    /** Base URL clients use to reach this server (REST, GraphQL, docs). */
    publicUrl: string;
    /**
     * A second listener serving only the job API and the worker protocol (`/v2/{endpointId}/…`),
     * to expose it apart from management; 0 picks a free port. null: none, the main listener
     * serves them. @default null
     */
    jobPort: number | null;
    /** Base URL of the job API: builds `requestUrls` and the URLs workers call. @default the job listener's, else `publicUrl` */
    publicJobUrl: string;
    /** Largest REST request body, bytes. @default 1 MiB */
    bodyLimit: number;
    logLevel: string;
    /** Longest a client may take to send a whole request (headers and body); then 408 and the connection closes. @default 60000 */
    requestTimeoutMs: number;
    /** Longest a client may take to send the request headers. @default 10000 */
    headersTimeoutMs: number;
    /** An idle keep-alive connection is closed after this long. @default 72000 */
    keepAliveTimeoutMs: number;
    /**
     * Connections one client address may hold open at once; more are answered 429 and closed. 0: no
     * cap. Every client behind a reverse proxy or NAT shares one address, as do the process
     * runtime's workers (loopback; the Node worker library opens a connection per job in flight):
     * size it for those, or set 0 behind a proxy that caps clients itself. @default 1024
     */
    maxConnectionsPerClient: number;
  };
  dataDir: string;
  /** `postgres://…` switches the store to PostgreSQL; otherwise SQLite in `dataDir`. */
  databaseUrl: string | null;
  /** PostgreSQL schema to use. @default "public" */
  databaseSchema: string;
  bootstrapKey: string | null;
  /** 32-byte key (hex or base64) that encrypts secrets at rest; generated into the data dir when absent. */
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
  networking: {
    /** Global networking addresses come from this IPv4 /16 or /24 pool. @default "10.200.0.0/16" */
    globalPool: string;
    /** `<pod_id>.<internalDomain>.internal` @default "gantry" */
    internalDomain: string;
  };
  pods: {
    /** How often the pod controller reconciles. @default 1000 */
    reconcileIntervalMs: number;
    /** Grace period between SIGTERM and SIGKILL when stopping an instance. @default 5000 */
    stopGraceMs: number;
  };
  serverless: ServerlessConfig;
  jobs: JobsHttpConfig;
  runtime: RuntimeConfig;
  /** The SSH proxy (config-ssh.ts, docs/ssh.md). */
  ssh: SshConfig;
  graphql: GraphqlLimits;
  quotas: QuotaConfig;
  /** Where the config file was read from, to resolve relative paths. */
  configDir: string;
  /** Keys of the config file Gantry does not know (a typo is reported, not silently ignored). */
  warnings: string[];
}

/** The agent protocol's timings (config file: `fleet.heartbeatMs`, …; docs/fleet.md). */
export interface AgentsConfig {
  /** How often an agent reports; handed to it when it joins. @default 10000 */
  heartbeatMs: number;
  /** A host whose last report is older than this is unavailable (placement skips it). Longer than `heartbeatMs`. @default 30000 */
  heartbeatTimeoutMs: number;
  /** How long an agent's operations long-poll is held; handed to it when it joins. At most 30000. @default 25000 */
  pollWaitMs: number;
  /** How long a host may stay unreachable before its pods' cost stops accruing. @default 300000 */
  lostGraceMs: number;
  /** How long a join token is good for when `gantry hosts token create` is given no `--ttl`. @default 3600000 */
  joinTokenTtlMs: number;
}

/** The agents' longest operations long-poll (docs/fleet.md). */
export const MAX_AGENT_POLL_WAIT_MS = 30_000;

/**
 * Bounds on a GraphQL document, checked before it is validated or run (over one: HTTP 200,
 * `errors[0].extensions.code` QUERY_TOO_COMPLEX, the message naming the bound and its value).
 */
export interface GraphqlLimits {
  /** Largest `query` text, bytes; checked before parsing. @default 65536 */
  maxDocumentBytes: number;
  /** Deepest field nesting, fragments expanded; braces, brackets and parentheses may nest twice this deep. @default 15 */
  maxDepth: number;
  /** Most aliased fields in one operation or fragment, fragments expanded. @default 50 */
  maxAliases: number;
  /** Most field selections (and fragment spreads) in one operation or fragment, fragments expanded, and in the whole document as written. @default 1000 */
  maxFields: number;
  /** Most root fields in one operation, fragments expanded; each one counts as a request against the rate limits. @default 20 */
  maxRootFields: number;
  /** Highest computed cost: each field 1, a list of objects multiplying what it selects by 10. @default 5000 */
  maxCost: number;
}

/** Per-account quotas; each refusal names the quota and its value. */
export interface QuotaConfig {
  /** Pods an account holds (every status but TERMINATED). @default 50 */
  pods: number;
  /**
   * GPUs an account's pods meant to run and its serverless workers hold at once. A stopped pod
   * releases its GPUs (it keeps only its machine assignment), so starting it again counts them. @default 16
   */
  gpus: number;
  /** Jobs queued (IN_QUEUE) per account, across its endpoints. @default 100000 */
  queuedJobs: number;
  /** Bytes of job inputs, outputs, errors and unread stream chunks an account has stored. @default 1 GiB */
  storedJobBytes: number;
  /** Bytes of unread stream chunks one job may buffer (later chunks are refused until a client reads). @default 20 MiB */
  streamBytesPerJob: number;
}

/** The job API and worker protocol settings. */
export interface JobsHttpConfig {
  /** Longest a `job-take` long-poll is held before 204 (workers give up after 90 s). @default 80000 */
  takeWaitMs: number;
  /** Longest a `job-stop` long-poll is held before 204. @default 80000 */
  stopWaitMs: number;
  /** How often the timekeeper runs (timeouts, ttl, retention, lost workers). @default 1000 */
  timekeeperIntervalMs: number;
  /** A worker neither pinging nor polling for this long is lost; its jobs go back to the queue. @default 30000 */
  heartbeatTimeoutMs: number;
  /** How long the row of a dead worker stays (listed by `GET /v2/serverless/{id}/workers`) before it is pruned. @default 3600000 */
  deadWorkerRetentionMs: number;
  /** Heartbeat period handed to workers (RUNPOD_PING_INTERVAL). @default 10000 */
  pingIntervalMs: number;
  /** Times a job goes back to the queue after losing its worker before it FAILS. @default 3 */
  retryBudget: number;
  /** Whether the spec 8.1 limits apply to the job API. @default true */
  rateLimits: boolean;
  /** Requests per 10 s each running worker adds to the dynamic limit. @default 200 */
  rateLimitPerWorker: number;
  /** Most submissions (or completions, or takes) committed in one transaction. @default 1000 */
  maxBatchSize: number;
  /**
   * Group-commit transactions open at once. null: 1 on SQLite (one writer), 4 on PostgreSQL
   * (its pool has several connections). @default null
   */
  commitConcurrency: number | null;
  /**
   * Worker protocol calls (take, done, stream, stop, ping) per 10 s, counted per account (a key
   * naming another account's endpoint counts against its own account). Over a limit: 429
   * RATE_LIMITED with Retry-After (the Python SDK sleeps 5 s on a 429 from job-take). Keys with
   * `--exempt` skip them; workers' own keys never do. 0: no limit.
   */
  workerRateLimits: {
    /** per worker id, within its endpoint: a worker streaming ~100 chunks/s on several jobs at once, plus takes and pings, stays well under it @default 5000 */
    perWorker: number;
    /** per endpoint, all its workers together; raised to `perWorker` × the endpoint's running launched workers when that is more @default 20000 */
    perEndpoint: number;
    /** rows one endpoint may hold for workers attached by hand (not launched by the platform); a new worker id past it is refused (429) until one is lost; dead ones are dropped first @default 200 */
    attachedWorkers: number;
  };
}

/** Webhook delivery (spec 6): one call plus `maxAttempts - 1` retries, `retryDelayMs` apart. */
export interface WebhookConfig {
  /** Longest wait for a receiver's answer. @default 10000 */
  timeoutMs: number;
  /** Delay between a failed attempt and the next. @default 10000 */
  retryDelayMs: number;
  /** Attempts in all (1 + retries). @default 3 */
  maxAttempts: number;
  /** How often due retries are looked for (finishing jobs wake the dispatcher at once). @default 1000 */
  pollIntervalMs: number;
  /** Calls in flight at once. @default 16 */
  concurrency: number;
  /** Calls in flight at once for one account's jobs, so one tenant's slow receivers never hold every slot. @default 4 */
  perAccountConcurrency: number;
  /** Calls in flight at once to one receiver (scheme, host and port). @default 2 */
  perReceiverConcurrency: number;
  /**
   * Receivers on loopback, link-local, private and other non-public addresses, checked on the
   * resolved address at send time: `allow`, `deny`, or `auto` (allow while the deployment has a
   * single account — a dev setup — and deny once it has more). @default "auto"
   */
  privateAddresses: 'auto' | 'allow' | 'deny';
}

/** The serverless autoscaler. */
export interface AutoscalerConfig {
  /** How often every endpoint is reconciled (submissions wake it sooner). @default 1000 */
  intervalMs: number;
  /**
   * Least time between passes that submissions wake: the first job after a quiet spell is acted
   * on at once, a flood of jobs costs one pass per gap, not one per job. @default 100
   */
  nudgeGapMs: number;
  /** A worker that ends within this long of starting counts as a crash of its endpoint. @default 30000 */
  crashWindowMs: number;
  /** Consecutive crashes after which the endpoint is backed off. @default 3 */
  crashThreshold: number;
  /** First back-off; doubles with every further crash. @default 10000 */
  backoffBaseMs: number;
  /** Longest back-off. @default 300000 */
  backoffMaxMs: number;
  /** A worker still INITIALIZING after this long is stopped and counted as a crash. @default 600000 */
  startTimeoutMs: number;
}

export interface ServerlessConfig {
  webhooks: WebhookConfig;
  autoscaler: AutoscalerConfig;
}

export interface ConfigSources {
  env: Record<string, string | undefined>;
  /** Flags from the command line, already parsed. */
  flags?: { port?: number; host?: string; dataDir?: string; config?: string };
}

/** The SDKs give up on a long-poll after 90 s (wire-protocol §1): hold one at most 85 s. */
function longPollHold(v: unknown, field: string): number {
  const n = num(v, field, 80_000);
  if (n > 85_000) fail(`${field} must be at most 85000 ms: the worker SDKs give up on a long-poll after 90 s`);
  return n;
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

function parseCatalog(raw: unknown): Catalog {
  const defaults = defaultCatalog();
  if (raw === undefined) return defaults;
  if (!isObj(raw)) fail('catalog must be a mapping');
  return {
    gpuTypes: Array.isArray(raw.gpuTypes) ? (raw.gpuTypes as Catalog['gpuTypes']) : defaults.gpuTypes,
    pools: Array.isArray(raw.pools) ? (raw.pools as Catalog['pools']) : defaults.pools,
    cpuFlavors: Array.isArray(raw.cpuFlavors) ? (raw.cpuFlavors as Catalog['cpuFlavors']) : defaults.cpuFlavors,
    dataCenters: Array.isArray(raw.dataCenters) ? (raw.dataCenters as Catalog['dataCenters']) : defaults.dataCenters,
  };
}

/** `fleet` is the list of the process runtime's hosts, or a mapping of the agents' settings and `hosts`. */
const fleetHosts = (raw: unknown): unknown => (isObj(raw) ? raw.hosts : raw);

function parseAgents(raw: unknown): AgentsConfig {
  const section: Obj = isObj(raw) ? raw : {};
  const heartbeatMs = Math.max(100, num(section.heartbeatMs, 'fleet.heartbeatMs', 10_000));
  const heartbeatTimeoutMs = num(section.heartbeatTimeoutMs, 'fleet.heartbeatTimeoutMs', 30_000);
  if (heartbeatTimeoutMs <= heartbeatMs) fail(`fleet.heartbeatTimeoutMs (${heartbeatTimeoutMs}) must be longer than fleet.heartbeatMs (${heartbeatMs}): every host would flap between available and unavailable`);
  const pollWaitMs = num(section.pollWaitMs, 'fleet.pollWaitMs', 25_000);
  if (pollWaitMs > MAX_AGENT_POLL_WAIT_MS) fail(`fleet.pollWaitMs must be at most ${MAX_AGENT_POLL_WAIT_MS} ms`);
  const joinTokenTtlMs = num(section.joinTokenTtlMs, 'fleet.joinTokenTtlMs', 3_600_000);
  if (joinTokenTtlMs < 1000) fail('fleet.joinTokenTtlMs must be at least 1000 ms');
  return { heartbeatMs, heartbeatTimeoutMs, pollWaitMs, lostGraceMs: num(section.lostGraceMs, 'fleet.lostGraceMs', 300_000), joinTokenTtlMs };
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
    const dataCenterId = typeof h.dataCenterId === 'string' ? h.dataCenterId : fail(`fleet[${i}].dataCenterId is required`);
    if (!catalog.dataCenters.some((d) => d.id === dataCenterId)) fail(`fleet[${i}].dataCenterId "${dataCenterId}" is not in the catalog`);
    const gpuTypeId = typeof h.gpuTypeId === 'string' ? h.gpuTypeId : null;
    if (gpuTypeId && !catalog.gpuTypes.some((g) => g.id === gpuTypeId)) fail(`fleet[${i}].gpuTypeId "${gpuTypeId}" is not in the catalog`);
    const range = Array.isArray(h.portRange) ? h.portRange : [30000 + i * 1000, 30000 + i * 1000 + 999];
    return {
      id,
      dataCenterId,
      cloud: h.cloud === 'COMMUNITY' ? 'COMMUNITY' : 'SECURE',
      cudaVersion: h.cudaVersion === undefined || h.cudaVersion === null ? null : String(h.cudaVersion),
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
  const server = isObj(file.server) ? file.server : {};
  const port = flags.port ?? num(env.PORT ?? server.port, 'port', 8080);
  const host = flags.host ?? env.GANTRY_HOST ?? (typeof server.host === 'string' ? server.host : '127.0.0.1');
  const rawDataDir = flags.dataDir ?? env.GANTRY_DATA_DIR ?? (typeof file.dataDir === 'string' ? file.dataDir : '.gantry');
  const dataDir = isAbsolute(rawDataDir) ? rawDataDir : resolve(rawDataDir);
  const publicHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const publicUrl = (env.GANTRY_PUBLIC_URL ?? (typeof server.publicUrl === 'string' ? server.publicUrl : `http://${publicHost}:${port}`)).replace(/\/+$/, '');
  const rawJobPort = env.GANTRY_JOB_PORT ?? server.jobPort;
  const jobPort = rawJobPort === undefined || rawJobPort === null || rawJobPort === '' ? null : num(rawJobPort, 'server.jobPort', 0);
  const publicJobUrl = (
    env.GANTRY_PUBLIC_JOB_URL ?? (typeof server.publicJobUrl === 'string' ? server.publicJobUrl : jobPort !== null ? `http://${publicHost}:${jobPort}` : publicUrl)
  ).replace(/\/+$/, '');
  const catalog = parseCatalog(file.catalog);
  const limits = isObj(file.rateLimits) ? file.rateLimits : {};
  const networking = isObj(file.networking) ? file.networking : {};
  const pods = isObj(file.pods) ? file.pods : {};
  const jobs = isObj(file.jobs) ? file.jobs : {};
  const serverless = isObj(file.serverless) ? file.serverless : {};
  const webhooks = isObj(serverless.webhooks) ? serverless.webhooks : {};
  const autoscaler = isObj(serverless.autoscaler) ? serverless.autoscaler : {};
  const graphql = isObj(file.graphql) ? file.graphql : {};
  const quotas = isObj(file.quotas) ? file.quotas : {};
  const workerLimits = isObj(jobs.workerRateLimits) ? jobs.workerRateLimits : {};
  const databaseUrl = env.GANTRY_DATABASE_URL ?? (typeof file.databaseUrl === 'string' ? file.databaseUrl : null);
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) fail('GANTRY_DATABASE_URL must be a postgres:// URL');
  const databaseSchema = env.GANTRY_DATABASE_SCHEMA ?? (typeof file.databaseSchema === 'string' ? file.databaseSchema : 'public');
  const runtime = parseRuntime(file.runtime, env, { catalog, databaseUrl, databaseSchema, dataDir });
  // The process runtime's demo fleet is declared; the Docker runtime's one host is discovered.
  if (runtime.kind === 'docker' && fleetHosts(file.fleet) !== undefined)
    fail('fleet declares the hosts of the process runtime; with runtime docker the host is discovered from the engine (remove fleet, or fleet.hosts; runtime.docker sets hostId, dataCenterId, cloud, publicIp and portRange)');
  const images = parseImages(file.images, { commandRequired: runtime.kind === 'process' });
  for (const spec of Object.values(images)) if (spec.cwd && !isAbsolute(spec.cwd)) spec.cwd = join(configDir, spec.cwd);
  return {
    server: {
      host,
      port,
      publicUrl,
      jobPort,
      publicJobUrl,
      bodyLimit: num(server.bodyLimit, 'server.bodyLimit', 1024 * 1024),
      logLevel: env.GANTRY_LOG_LEVEL ?? (typeof server.logLevel === 'string' ? server.logLevel : 'info'),
      requestTimeoutMs: num(server.requestTimeoutMs, 'server.requestTimeoutMs', 60_000),
      headersTimeoutMs: num(server.headersTimeoutMs, 'server.headersTimeoutMs', 10_000),
      keepAliveTimeoutMs: num(server.keepAliveTimeoutMs, 'server.keepAliveTimeoutMs', 72_000),
      maxConnectionsPerClient: Math.floor(num(server.maxConnectionsPerClient, 'server.maxConnectionsPerClient', 1024)),
    },
    dataDir,
    databaseUrl,
    databaseSchema,
    bootstrapKey: env.GANTRY_BOOTSTRAP_KEY ?? null,
    secretKey: env.GANTRY_SECRET_KEY ?? (typeof file.secretKey === 'string' ? file.secretKey : null),
    rateLimits: {
      minute: num(limits.minute, 'rateLimits.minute', 1200),
      hour: num(limits.hour, 'rateLimits.hour', 30_000),
      day: num(limits.day, 'rateLimits.day', 300_000),
    },
    images,
    catalog,
    fleet: runtime.kind === 'process' ? parseFleet(fleetHosts(file.fleet), catalog) : [],
    agents: parseAgents(file.fleet),
    networking: {
      globalPool: typeof networking.globalPool === 'string' ? networking.globalPool : '10.200.0.0/16',
      internalDomain: typeof networking.internalDomain === 'string' ? networking.internalDomain : 'gantry',
    },
    pods: {
      reconcileIntervalMs: num(pods.reconcileIntervalMs, 'pods.reconcileIntervalMs', 1000),
      stopGraceMs: num(pods.stopGraceMs, 'pods.stopGraceMs', 5000),
    },
    jobs: {
      takeWaitMs: longPollHold(jobs.takeWaitMs, 'jobs.takeWaitMs'),
      stopWaitMs: longPollHold(jobs.stopWaitMs, 'jobs.stopWaitMs'),
      timekeeperIntervalMs: Math.max(10, num(jobs.timekeeperIntervalMs, 'jobs.timekeeperIntervalMs', 1000)),
      heartbeatTimeoutMs: num(jobs.heartbeatTimeoutMs, 'jobs.heartbeatTimeoutMs', 30_000),
      deadWorkerRetentionMs: num(jobs.deadWorkerRetentionMs, 'jobs.deadWorkerRetentionMs', 3_600_000),
      pingIntervalMs: Math.max(100, num(jobs.pingIntervalMs, 'jobs.pingIntervalMs', 10_000)),
      retryBudget: Math.floor(num(jobs.retryBudget, 'jobs.retryBudget', 3)),
      rateLimits: jobs.rateLimits !== false,
      rateLimitPerWorker: num(jobs.rateLimitPerWorker, 'jobs.rateLimitPerWorker', 200),
      maxBatchSize: Math.max(1, Math.floor(num(jobs.maxBatchSize, 'jobs.maxBatchSize', 1000))),
      commitConcurrency: jobs.commitConcurrency === undefined || jobs.commitConcurrency === null ? null : Math.max(1, Math.floor(num(jobs.commitConcurrency, 'jobs.commitConcurrency', 1))),
      workerRateLimits: {
        perWorker: Math.max(0, Math.floor(num(workerLimits.perWorker, 'jobs.workerRateLimits.perWorker', 5000))),
        perEndpoint: Math.max(0, Math.floor(num(workerLimits.perEndpoint, 'jobs.workerRateLimits.perEndpoint', 20_000))),
        attachedWorkers: Math.max(0, Math.floor(num(workerLimits.attachedWorkers, 'jobs.workerRateLimits.attachedWorkers', 200))),
      },
    },
    serverless: {
      webhooks: {
        timeoutMs: num(webhooks.timeoutMs, 'serverless.webhooks.timeoutMs', 10_000),
        retryDelayMs: num(webhooks.retryDelayMs, 'serverless.webhooks.retryDelayMs', 10_000),
        maxAttempts: Math.max(1, Math.floor(num(webhooks.maxAttempts, 'serverless.webhooks.maxAttempts', 3))),
        pollIntervalMs: Math.max(10, num(webhooks.pollIntervalMs, 'serverless.webhooks.pollIntervalMs', 1000)),
        concurrency: Math.max(1, Math.floor(num(webhooks.concurrency, 'serverless.webhooks.concurrency', 16))),
        perAccountConcurrency: Math.max(1, Math.floor(num(webhooks.perAccountConcurrency, 'serverless.webhooks.perAccountConcurrency', 4))),
        perReceiverConcurrency: Math.max(1, Math.floor(num(webhooks.perReceiverConcurrency, 'serverless.webhooks.perReceiverConcurrency', 2))),
        privateAddresses: oneOf(webhooks.privateAddresses, 'serverless.webhooks.privateAddresses', ['auto', 'allow', 'deny'] as const, 'auto'),
      },
      autoscaler: {
        intervalMs: Math.max(10, num(autoscaler.intervalMs, 'serverless.autoscaler.intervalMs', 1000)),
        nudgeGapMs: Math.max(0, num(autoscaler.nudgeGapMs, 'serverless.autoscaler.nudgeGapMs', 100)),
        crashWindowMs: num(autoscaler.crashWindowMs, 'serverless.autoscaler.crashWindowMs', 30_000),
        crashThreshold: Math.max(1, Math.floor(num(autoscaler.crashThreshold, 'serverless.autoscaler.crashThreshold', 3))),
        backoffBaseMs: num(autoscaler.backoffBaseMs, 'serverless.autoscaler.backoffBaseMs', 10_000),
        backoffMaxMs: num(autoscaler.backoffMaxMs, 'serverless.autoscaler.backoffMaxMs', 300_000),
        startTimeoutMs: num(autoscaler.startTimeoutMs, 'serverless.autoscaler.startTimeoutMs', 600_000),
      },
    },
    runtime,
    ssh: parseSsh(file.ssh, env, { port, publicUrl }),
    graphql: {
      maxDocumentBytes: num(graphql.maxDocumentBytes, 'graphql.maxDocumentBytes', 65_536),
      maxDepth: num(graphql.maxDepth, 'graphql.maxDepth', 15),
      maxAliases: num(graphql.maxAliases, 'graphql.maxAliases', 50),
      maxFields: num(graphql.maxFields, 'graphql.maxFields', 1000),
      maxRootFields: num(graphql.maxRootFields, 'graphql.maxRootFields', 20),
      maxCost: num(graphql.maxCost, 'graphql.maxCost', 5000),
    },
    quotas: {
      pods: num(quotas.pods, 'quotas.pods', 50),
      gpus: num(quotas.gpus, 'quotas.gpus', 16),
      queuedJobs: num(quotas.queuedJobs, 'quotas.queuedJobs', 100_000),
      storedJobBytes: num(quotas.storedJobBytes, 'quotas.storedJobBytes', 1024 ** 3),
      streamBytesPerJob: num(quotas.streamBytesPerJob, 'quotas.streamBytesPerJob', 20 * 1024 ** 2),
    },
    configDir,
    warnings: [...unknownKeys(file), ...(runtime.kind === 'process' ? bareInterpreterWarnings(images) : dockerImageWarnings(images))],
  };
}

/** The keys each section of the config file may hold; `null`: any (maps keyed by the user). */
const KNOWN_KEYS: Record<string, readonly string[] | null> = {
  '': ['server', 'dataDir', 'databaseUrl', 'databaseSchema', 'secretKey', 'rateLimits', 'images', 'catalog', 'fleet', 'networking', 'pods', 'jobs', 'serverless', 'runtime', 'graphql', 'quotas', 'ssh'],
  server: ['host', 'port', 'publicUrl', 'jobPort', 'publicJobUrl', 'bodyLimit', 'logLevel', 'requestTimeoutMs', 'headersTimeoutMs', 'keepAliveTimeoutMs', 'maxConnectionsPerClient'],
  rateLimits: ['minute', 'hour', 'day'],
  networking: ['globalPool', 'internalDomain'],
  pods: ['reconcileIntervalMs', 'stopGraceMs'],
  jobs: [
    'takeWaitMs', 'stopWaitMs', 'timekeeperIntervalMs', 'heartbeatTimeoutMs', 'deadWorkerRetentionMs', 'pingIntervalMs',
    'retryBudget', 'rateLimits', 'rateLimitPerWorker', 'maxBatchSize', 'commitConcurrency', 'workerRateLimits',
  ],
  'jobs.workerRateLimits': ['perWorker', 'perEndpoint', 'attachedWorkers'],
  fleet: ['hosts', 'heartbeatMs', 'heartbeatTimeoutMs', 'pollWaitMs', 'lostGraceMs', 'joinTokenTtlMs'],
  ...RUNTIME_KEYS,
  graphql: ['maxDocumentBytes', 'maxDepth', 'maxAliases', 'maxFields', 'maxRootFields', 'maxCost'],
  ssh: SSH_KEYS,
  quotas: ['pods', 'gpus', 'queuedJobs', 'storedJobBytes', 'streamBytesPerJob'],
  serverless: ['webhooks', 'autoscaler'],
  'serverless.webhooks': ['timeoutMs', 'retryDelayMs', 'maxAttempts', 'pollIntervalMs', 'concurrency', 'perAccountConcurrency', 'perReceiverConcurrency', 'privateAddresses'],
  'serverless.autoscaler': ['intervalMs', 'nudgeGapMs', 'crashWindowMs', 'crashThreshold', 'backoffBaseMs', 'backoffMaxMs', 'startTimeoutMs'],
};

function unknownKeys(file: Obj): string[] {
  const warnings: string[] = [];
  const visit = (section: string, value: Obj): void => {
    const known = KNOWN_KEYS[section];
    if (!known) return;
    for (const [key, child] of Object.entries(value)) {
      const path = section ? `${section}.${key}` : key;
      if (!known.includes(key)) warnings.push(`unknown config key "${path}" is ignored (known here: ${known.join(', ')})`);
      else if (isObj(child)) visit(path, child);
    }
  };
  visit('', file);
  return warnings;
}
