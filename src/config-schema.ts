/**
 * The config file's schema: every key once, with its type, default, environment variable and
 * description. config-decode.ts validates against it, config.ts derives the `Config` types from it
 * (`StaticDecode`), and config-reference.ts writes docs/configuration.md from it.
 */
import { Type, type StaticDecode } from '@sinclair/typebox';
import { amount, atLeast, choice, count, flag, nonEmpty, orNull, text } from './config-fields.js';
import { MAX_AGENT_POLL_WAIT_MS } from './fleet/protocol.js';

/** The SDKs give up on a long-poll after 90 s (wire-protocol §1): one is held at most 85 s. */
const MAX_LONG_POLL_HOLD_MS = 85_000;
/** Where the Docker runtime finds its engine when neither DOCKER_HOST nor runtime.docker.host says. */
export const DEFAULT_DOCKER_HOST = 'unix:///var/run/docker.sock';

const port = () => Type.Integer({ minimum: 1, maximum: 65_535 });

export const ServerSchema = Type.Object(
  {
    host: text('127.0.0.1', 'Listen address. `--host`.', { env: 'GANTRY_HOST' }),
    port: amount(8080, 'Listen port. `--port`.', { env: 'PORT' }),
    publicUrl: Type.Optional(
      Type.String({
        description: 'Base URL clients use to reach this server (REST, GraphQL, docs).',
        env: 'GANTRY_PUBLIC_URL',
        defaultText: '`http://<host>:<port>`',
      }),
    ),
    jobPort: orNull(
      Type.Number({ minimum: 0 }),
      'A second listener serving only the job API and the worker protocol (`/v2/{endpointId}/…`), to expose it apart from management; 0 picks a free port. null: none, the main listener serves them.',
      { env: 'GANTRY_JOB_PORT' },
    ),
    publicJobUrl: Type.Optional(
      Type.String({
        description: 'Base URL of the job API: builds `requestUrls` and the URLs workers call.',
        env: 'GANTRY_PUBLIC_JOB_URL',
        defaultText: "the job listener's, else `publicUrl`",
      }),
    ),
    bodyLimit: amount(1024 * 1024, 'Largest REST request body, bytes.'),
    logLevel: text(
      'info',
      'pino log level. Lines go to stdout in batches: info and below at most 100 ms late, warn and above at once (docs/performance.md).',
      { env: 'GANTRY_LOG_LEVEL' },
    ),
    requestTimeoutMs: amount(
      60_000,
      'Longest a client may take to send a whole request (headers and body); then 408 and the connection closes.',
    ),
    headersTimeoutMs: amount(10_000, 'Longest a client may take to send the request headers.'),
    keepAliveTimeoutMs: amount(72_000, 'An idle keep-alive connection is closed after this long.'),
    maxConnectionsPerClient: count(
      0,
      1024,
      "Connections one client address may hold open at once; more are answered 429 and closed. 0: no cap. Every client behind a reverse proxy or NAT shares one address, as do the process runtime's workers (loopback; the Node worker library opens a connection per job in flight): size it for those, or set 0 behind a proxy that caps clients itself.",
    ),
  },
  { description: 'The HTTP listeners.' },
);

export const RateLimitsSchema = Type.Object(
  {
    minute: amount(1200, 'Requests per minute.'),
    hour: amount(30_000, 'Requests per hour.'),
    day: amount(300_000, 'Requests per day.'),
  },
  { description: 'Per API key; a GraphQL root field counts as one request.' },
);

export const NetworkingSchema = Type.Object({
  globalPool: text('10.200.0.0/16', 'Global networking addresses come from this IPv4 /16 or /24 pool.'),
  internalDomain: text('gantry', '`<pod_id>.<internalDomain>.internal`'),
});

export const PodsSchema = Type.Object({
  reconcileIntervalMs: amount(1000, 'How often the pod controller reconciles.'),
  stopGraceMs: amount(5000, 'Grace period between SIGTERM and SIGKILL when stopping an instance.'),
});

const longPollHold = (description: string) =>
  amount(80_000, description, {
    maximum: MAX_LONG_POLL_HOLD_MS,
    bounds: `at most ${MAX_LONG_POLL_HOLD_MS} ms: the worker SDKs give up on a long-poll after 90 s`,
  });

const WorkerRateLimitsSchema = Type.Object(
  {
    perWorker: count(
      0,
      5000,
      'Per worker id, within its endpoint: a worker streaming ~100 chunks/s on several jobs at once, plus takes and pings, stays well under it.',
    ),
    perEndpoint: count(
      0,
      20_000,
      "Per endpoint, all its workers together; raised to `perWorker` × the endpoint's running launched workers when that is more.",
    ),
    attachedWorkers: count(
      0,
      200,
      'Rows one endpoint may hold for workers attached by hand (not launched by the platform); a new worker id past it is refused (429) until one is lost; dead ones are dropped first.',
    ),
  },
  {
    description:
      "Worker protocol calls (take, done, stream, stop, ping) per 10 s, counted per account (a key naming another account's endpoint counts against its own account). Over a limit: 429 RATE_LIMITED with Retry-After (the Python SDK sleeps 5 s on a 429 from job-take), except a result that finishes a job the worker holds, which is always admitted (the SDK drops a result after three refused tries). Keys with `--exempt` skip them; workers' own keys never do. 0: no limit.",
  },
);

export const JobsSchema = Type.Object(
  {
    takeWaitMs: longPollHold('Longest a `job-take` long-poll is held before 204 (workers give up after 90 s).'),
    stopWaitMs: longPollHold('Longest a `job-stop` long-poll is held before 204.'),
    timekeeperIntervalMs: atLeast(
      10,
      1000,
      'How often the timekeeper runs (timeouts, ttl, retention, lost workers). At least 10.',
    ),
    heartbeatTimeoutMs: amount(
      30_000,
      'A worker neither pinging nor polling for this long is lost; its jobs go back to the queue. A ping listing no job gives back the jobs its worker took longer ago than this (docs/serverless.md, "Jobs a worker no longer holds").',
    ),
    deadWorkerRetentionMs: amount(
      3_600_000,
      'How long the row of a dead worker stays (listed by GraphQL `endpoint { pods }` as EXITED; `GET /v2/serverless/{id}/workers` lists live workers only) before it is pruned.',
    ),
    pingIntervalMs: atLeast(100, 10_000, 'Heartbeat period handed to workers (RUNPOD_PING_INTERVAL). At least 100.'),
    retryBudget: count(0, 3, 'Times a job goes back to the queue after losing its worker before it FAILS.'),
    rateLimits: flag(true, 'Whether the spec 8.1 limits apply to the job API.'),
    rateLimitPerWorker: amount(200, 'Requests per 10 s each running worker adds to the dynamic limit.'),
    maxBatchSize: count(1, 1000, 'Most submissions (or completions, or takes) committed in one transaction.'),
    commitConcurrency: Type.Transform(
      orNull(
        Type.Number({ minimum: 0 }),
        'Group-commit transactions open at once. null: 1 on SQLite (one writer), 4 on PostgreSQL (its pool has several connections).',
      ),
    )
      .Decode((n) => (n === null ? null : Math.max(1, Math.floor(n))))
      .Encode((n) => n),
    workerRateLimits: WorkerRateLimitsSchema,
  },
  { description: 'The job API and worker protocol.' },
);

const WebhooksSchema = Type.Object(
  {
    timeoutMs: amount(10_000, "Longest wait for a receiver's answer."),
    retryDelayMs: amount(10_000, 'Delay between a failed attempt and the next.'),
    maxAttempts: count(1, 3, 'Attempts in all (1 + retries).'),
    pollIntervalMs: atLeast(
      10,
      1000,
      'How often due retries are looked for (finishing jobs wake the dispatcher at once).',
    ),
    concurrency: count(1, 16, 'Calls in flight at once.'),
    perAccountConcurrency: count(
      1,
      4,
      "Calls in flight at once for one account's jobs, so one tenant's slow receivers never hold every slot.",
    ),
    perReceiverConcurrency: count(1, 2, 'Calls in flight at once to one receiver (scheme, host and port).'),
    privateAddresses: choice(
      ['auto', 'allow', 'deny'],
      'auto',
      'Receivers on loopback, link-local, private and other non-public addresses, checked on the resolved address at send time: `allow`, `deny`, or `auto` (allow while the deployment has a single account — a dev setup — and deny once it has more).',
    ),
  },
  { description: 'Webhook delivery (spec 6): one call plus `maxAttempts - 1` retries, `retryDelayMs` apart.' },
);

const AutoscalerSchema = Type.Object(
  {
    intervalMs: atLeast(10, 1000, 'How often every endpoint is reconciled (submissions wake it sooner).'),
    nudgeGapMs: amount(
      100,
      'Least time between passes that submissions wake: the first job after a quiet spell is acted on at once, a flood of jobs costs one pass per gap, not one per job.',
    ),
    crashWindowMs: amount(30_000, 'A worker that ends within this long of starting counts as a crash of its endpoint.'),
    crashThreshold: count(1, 3, 'Consecutive crashes after which the endpoint is backed off.'),
    backoffBaseMs: amount(10_000, 'First back-off; doubles with every further crash.'),
    backoffMaxMs: amount(300_000, 'Longest back-off.'),
    startTimeoutMs: amount(600_000, 'A worker still INITIALIZING after this long is stopped and counted as a crash.'),
  },
  { description: 'The serverless autoscaler.' },
);

const ServerlessSchema = Type.Object({ webhooks: WebhooksSchema, autoscaler: AutoscalerSchema });

const GraphqlSchema = Type.Object(
  {
    maxDocumentBytes: amount(65_536, 'Largest `query` text, bytes; checked before parsing.'),
    maxDepth: amount(
      15,
      'Deepest field nesting, fragments expanded; braces, brackets and parentheses may nest twice this deep.',
    ),
    maxAliases: amount(50, 'Most aliased fields in one operation or fragment, fragments expanded.'),
    maxFields: amount(
      1000,
      'Most field selections (and fragment spreads) in one operation or fragment, fragments expanded, and in the whole document as written.',
    ),
    maxRootFields: amount(
      20,
      'Most root fields in one operation, fragments expanded; each one counts as a request against the rate limits.',
    ),
    maxCost: amount(5000, 'Highest computed cost: each field 1, a list of objects multiplying what it selects by 10.'),
  },
  {
    description:
      'Bounds on a GraphQL document, checked before it is validated or run (over one: HTTP 200, `errors[0].extensions.code` QUERY_TOO_COMPLEX, the message naming the bound and its value).',
  },
);

export const QuotasSchema = Type.Object(
  {
    pods: amount(50, 'Pods an account holds (every status but TERMINATED).'),
    gpus: amount(
      16,
      "GPUs an account's pods meant to run and its serverless workers hold at once. A stopped pod releases its GPUs (it keeps only its machine assignment), so starting it again counts them.",
    ),
    clusters: amount(
      16,
      'Clusters an account holds at once. Each takes one of the 4,096 private cluster networks every account shares, so this keeps one account from taking them all.',
    ),
    queuedJobs: amount(100_000, 'Jobs queued (IN_QUEUE) per account, across its endpoints.'),
    storedJobBytes: amount(
      1024 ** 3,
      'Bytes of job inputs, outputs, errors and unread stream chunks an account has stored.',
    ),
    streamBytesPerJob: amount(
      20 * 1024 ** 2,
      'Bytes of unread stream chunks one job may buffer (later chunks are refused until a client reads).',
    ),
    logStreams: count(
      1,
      100,
      'Log streams (`GET /v2/pods/{id}/logs`, `GET /v2/serverless/{id}/workers/{workerId}/logs`) an account holds open at once, all its keys together (read keys too). Counted per replica: with several replicas an account may hold this many on each. Past it a new stream is refused with 429 TOO_MANY_LOG_STREAMS and `Retry-After`.',
    ),
    apiKeys: amount(
      100,
      "Live (not revoked) read and write API keys an account holds; `POST /v2/account/api-keys` is refused past it. Keys made with `gantry keys create` are not refused, and workers' keys are not counted.",
    ),
  },
  { description: 'Per-account quotas; each refusal names the quota and its value.' },
);

export const SshSchema = Type.Object(
  {
    enabled: flag(true, 'Whether the proxy listens.', { env: 'GANTRY_SSH_ENABLED' }),
    port: Type.Optional(
      Type.Transform(
        Type.Number({
          minimum: 0,
          maximum: 65_535,
          bounds: 'a TCP port (0-65535)',
          description: 'The port it listens on, on `server.host`; 0 picks a free one.',
          env: 'GANTRY_SSH_PORT',
          defaultText: '2222, or 0 when `server.port` is 0',
        }),
      )
        .Decode((n) => Math.floor(n))
        .Encode((n) => n),
    ),
    host: Type.Optional(
      Type.String({
        description: 'The host `ssh.proxy` advertises (and its `command` dials).',
        env: 'GANTRY_SSH_HOST',
        defaultText: 'the host of `server.publicUrl`',
      }),
    ),
    idleTimeoutMs: amount(1_800_000, 'A session with no traffic either way for this long is closed. 0: never.'),
    keepaliveIntervalMs: amount(15_000, 'How often a quiet connection is probed (keepalive); 0: never.'),
    keepaliveCountMax: count(1, 3, 'Unanswered probes after which a connection counts as half-open and is closed.'),
  },
  { description: 'The SSH proxy: an SSH server inside Gantry that opens a shell inside a pod (docs/ssh.md).' },
);

/** `fleet` as a mapping (a list is the short form of `{ hosts: […] }`). */
const FleetSchema = Type.Object(
  {
    heartbeatMs: atLeast(100, 10_000, 'How often an agent reports; handed to it when it joins. At least 100.'),
    heartbeatTimeoutMs: amount(
      30_000,
      'A host whose last report is older than this is unavailable (placement skips it). Longer than `heartbeatMs`.',
    ),
    pollWaitMs: amount(25_000, "How long an agent's operations long-poll is held; handed to it when it joins.", {
      maximum: MAX_AGENT_POLL_WAIT_MS,
      bounds: `at most ${MAX_AGENT_POLL_WAIT_MS} ms`,
    }),
    lostGraceMs: amount(300_000, "How long a host may stay unreachable before its pods' cost stops accruing."),
    joinTokenTtlMs: amount(
      3_600_000,
      'How long a join token is good for when `gantry hosts token create` is given no `--ttl`.',
      { minimum: 1000, bounds: 'at least 1000 ms' },
    ),
    hosts: Type.Optional(
      Type.Unknown({
        description:
          "The process runtime's hosts: a list of `{ id, dataCenterId, cloud, gpuTypeId, gpuCount, cudaVersion, cpuFlavors, vcpus, memoryGb, diskGb, portRange, publicIp }`.",
        defaultText: 'the demo fleet',
      }),
    ),
  },
  {
    description:
      "The agents of joined hosts (`gantry agent`, docs/fleet.md), and the process runtime's hosts. A list is the short form of `{ hosts: [...] }`.",
  },
);

const RegistriesSchema = Type.Object(
  {
    allow: Type.Array(Type.String(), {
      default: [],
      description:
        'Registries allowed even on loopback or private addresses (`localhost:5000`, `*.corp.example`, `[::1]:5000`).',
      env: 'GANTRY_DOCKER_REGISTRIES_ALLOW',
      envList: true,
      mustBe: 'a list of registries (host, host:port, [ipv6]:port or *.domain)',
    }),
    only: flag(false, 'Allow nothing but `allow` (list docker.io to keep Docker Hub).'),
    private: choice(
      ['refuse', 'allow'],
      'refuse',
      'Registries on loopback, private, link-local or other non-public addresses (or names resolving there).',
    ),
  },
  {
    description:
      "Which registries tenants' images may be pulled from: by default any public one, and none on loopback, private or other non-public addresses (the engine would reach them from the host's network).",
  },
);

const DockerNetworksSchema = Type.Object(
  {
    pool: text(
      '10.224.0.0/12',
      'The IPv4 range account networks take their subnets from, one subnet per account (and per cluster) on each engine. It must not overlap the networks the host is on.',
      {
        env: 'GANTRY_DOCKER_NETWORK_POOL',
        pattern: '^\\d{1,3}(\\.\\d{1,3}){3}/\\d{1,2}$',
        mustBe: 'an IPv4 CIDR such as 10.224.0.0/12',
      },
    ),
    subnetPrefix: Type.Integer({
      minimum: 8,
      maximum: 29,
      default: 24,
      description:
        "Each account network's prefix length: /24 holds 253 instances of one account on one host, and a /12 pool 4,096 such networks.",
    }),
    emptyGraceMs: amount(
      600_000,
      "How long an account's network is kept once no instance uses it, so the account's next instance on the host does not wait for a new one.",
    ),
  },
  {
    description:
      "The networks instances live on: each account's instances on a network of their own on every engine, none shared between accounts (docs/security.md).",
  },
);

const DockerFirewallSchema = Type.Object(
  {
    mode: choice(
      ['install', 'off'],
      'install',
      "`install`: Gantry installs the container firewall (iptables) where the engine's bridges are, at start and whenever the engine comes back: containers reach the job API and the internet, not their host's other services, the metadata address or private ranges. It needs CAP_NET_ADMIN there; without it the server refuses to start when it serves the job API off loopback or has more than one account. `off`: nothing is installed, and containers reach every service of their host unless you firewall them yourself (docs/security.md lists the rules).",
      { env: 'GANTRY_DOCKER_FIREWALL' },
    ),
    command: Type.Array(Type.String(), {
      default: [],
      description:
        'A prefix for the `iptables-save` and `iptables-restore` the firewall runs: `[sudo, -n]`, or `[nsenter, --net=/run/netns/engine]` for an engine in another network namespace.',
      mustBe: 'a list of strings (a command and its arguments)',
    }),
    allow: Type.Array(
      Type.String({
        pattern: '^\\d{1,3}(\\.\\d{1,3}){3}(/\\d{1,2})?(:\\d{1,5})?$',
        mustBe: 'an IPv4 address or CIDR, with an optional :port',
      }),
      {
        default: [],
        description:
          'Private or host destinations containers may reach besides the job API: `10.0.0.5:5432`, `10.20.0.0/16` (every port).',
        mustBe: 'a list of IPv4 addresses or CIDRs, each with an optional :port',
      },
    ),
  },
  { description: 'What containers may reach on their host and beyond (docs/security.md).' },
);

export const DockerRuntimeSchema = Type.Object(
  {
    host: nonEmpty({
      default: DEFAULT_DOCKER_HOST,
      description: 'The engine: `unix:///path/docker.sock` or `tcp://host:port`.',
      env: 'DOCKER_HOST',
    }),
    namespace: Type.Optional(
      Type.String({
        pattern: '^[a-z0-9][a-z0-9-]{0,31}$',
        mustBe: '1 to 32 lowercase letters, digits and dashes, starting with a letter or digit',
        description:
          "Names and labels (`gantry.namespace`) everything this installation creates on the engine, so installations sharing one engine never touch each other's. Must stay the same across restarts (containers are adopted by it).",
        defaultText:
          '12 hex digits of the SHA-256 of the database URL (without credentials) and schema, or of the data dir',
      }),
    ),
    hostId: orNull(nonEmpty(), "The host's id in the catalog and on pods.", {
      defaultText: "the engine's name (its hostname)",
    }),
    dataCenterId: orNull(nonEmpty(), 'The data center the host is in.', {
      defaultText: "the catalog's first data center",
    }),
    cloud: choice(['SECURE', 'COMMUNITY'], 'SECURE', 'The cloud the host is offered in.'),
    publicIp: orNull(nonEmpty(), 'The address clients reach published ports at.', {
      defaultText: "bindIp when it is one address, else the engine's TCP host, else 127.0.0.1",
    }),
    bindIp: nonEmpty({ default: '0.0.0.0', description: 'The address published ports bind on.' }),
    portRange: Type.Tuple([port(), port()], {
      default: [20000, 29999],
      description: "Host ports handed to pods' and workers' ports, inclusive.",
      mustBe: '[first, last]: two ports from 1 to 65535, first <= last',
    }),
    diskGb: orNull(Type.Number({ minimum: 0 }), 'Disk to offer, GB.', {
      defaultText: "the free space under the engine's data root, at start",
    }),
    gpuMode: choice(
      ['auto', 'nvidia', 'env-only'],
      'auto',
      'How GPUs reach containers: `nvidia` (device requests; needs the NVIDIA Container Toolkit), `env-only` (only NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES), or `auto`: `nvidia` when the engine has the nvidia runtime or CDI GPU devices.',
    ),
    cpuFlavors: orNull(
      Type.Array(Type.String(), { mustBe: 'a list of CPU flavor ids' }),
      'CPU flavors the host serves.',
      { defaultText: 'every catalog flavor on a host without GPUs, none on a GPU host' },
    ),
    nvidiaSmi: nonEmpty({
      default: 'nvidia-smi',
      description: 'The nvidia-smi to run: a path, or a name found on PATH.',
    }),
    registries: RegistriesSchema,
    networks: DockerNetworksSchema,
    firewall: DockerFirewallSchema,
    allowMultipleAccountsOnHostNetwork: flag(
      false,
      "Let the Docker runtime serve more than one account while its serverless workers use the host's network (they do when the job URL they are given is on loopback): each worker then reaches everything listening on the host's loopback, so by default the server refuses to start with a second account, and refuses to create one, in that state. Serving the job API on a non-loopback address lifts the rule without this.",
      { env: 'GANTRY_DOCKER_HOST_NETWORK_MULTI_ACCOUNT' },
    ),
  },
  { description: 'The Docker runtime: the engine, and what of its host is configured rather than discovered.' },
);

const ProcessRuntimeSchema = Type.Object({
  allowMultipleAccounts: flag(
    false,
    "Let the process runtime serve more than one account. It isolates nothing (an instance is a process of the server's own user, on the host's network), so by default the server refuses to start with a second account, and refuses to create one, while it uses this runtime.",
    { env: 'GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT' },
  ),
  orphanGraceMs: amount(
    30_000,
    'How long after the server died without closing (kill -9, a crash) its process instances are stopped by its watchdog; a server started again on the same data dir within it stops them at once.',
    { env: 'GANTRY_PROCESS_ORPHAN_GRACE_MS' },
  ),
});

export const RuntimeSchema = Type.Object(
  {
    kind: choice(
      ['process', 'docker', 'fleet'],
      'process',
      'Which runtime runs pods and workers: `process` (local child processes, the demo fleet), `docker` (containers on a Docker Engine, on the one host discovered from it) or `fleet` (containers on the hosts whose `gantry agent` joined: docs/fleet.md).',
      { env: 'GANTRY_RUNTIME' },
    ),
    process: ProcessRuntimeSchema,
    docker: DockerRuntimeSchema,
    orphanGraceMs: amount(
      60_000,
      'How long an instance the runtime found at server start may stay unclaimed by a pod or a launched worker before it is removed as an orphan.',
      { env: 'GANTRY_RUNTIME_ORPHAN_GRACE_MS' },
    ),
    statsIntervalMs: amount(
      5000,
      "How often the runtime's one shared sampler measures its live instances' utilisation (CPU, memory, GPUs: docs/utilization.md); pods show the last sample.",
      {
        minimum: 100,
        bounds: 'at least 100 (ms): each turn reads every live instance',
        env: 'GANTRY_RUNTIME_STATS_INTERVAL_MS',
      },
    ),
  },
  { description: 'How instances run. `runtime: docker` is the short form of `runtime: { kind: docker }`.' },
);

export const MetricsSchema = Type.Object(
  {
    token: orNull(
      Type.String({ minLength: 16, mustBe: 'a string of at least 16 characters' }),
      'Bearer token `GET /metrics` requires (`Authorization: Bearer <token>`), compared in constant time and never logged. null: `/metrics` answers 404 and no metric is collected.',
      { env: 'GANTRY_METRICS_TOKEN' },
    ),
    refreshMs: amount(
      60_000,
      "How often the gauges the database holds the truth of (queued and running jobs per endpoint, pods by status and GPU type) are re-read in the background, correcting what this process cannot see (other replicas, jobs deleted by their ttl). In between they move with this process's own submissions, takes and results. A scrape never reads the database. 0: read once at start only.",
      { minimum: 0 },
    ),
  },
  {
    description:
      'Prometheus metrics at `GET /metrics` (docs/metrics.md): operator-wide, not per account, behind their own token.',
  },
);

/** The whole config file. `images`, `catalog` and `fleet.hosts` are read by their own parsers. */
export const ConfigFileSchema = Type.Object({
  server: ServerSchema,
  dataDir: text(
    '.gantry',
    'SQLite database, secret key, volumes, instance folders; relative to the working directory. `--data-dir`.',
    { env: 'GANTRY_DATA_DIR' },
  ),
  databaseUrl: orNull(
    Type.String(),
    'A `postgres://` URL switches the store to PostgreSQL; otherwise SQLite in `dataDir`.',
    { env: 'GANTRY_DATABASE_URL' },
  ),
  databaseSchema: text('public', 'PostgreSQL schema to use.', { env: 'GANTRY_DATABASE_SCHEMA' }),
  secretKey: orNull(
    Type.String(),
    '32-byte key (hex or base64) that encrypts secrets at rest; replicas sharing a database must share it.',
    { env: 'GANTRY_SECRET_KEY', defaultText: 'generated into the data dir' },
  ),
  rateLimits: RateLimitsSchema,
  images: Type.Optional(
    Type.Unknown({
      description:
        'How the process runtime runs an image reference: a mapping of image reference → `{ command, cwd, env, tenantArgs, tenantEnv, health }` (README, "Config file").',
    }),
  ),
  catalog: Type.Optional(
    Type.Unknown({
      description:
        'The catalog: `{ gpuTypes, pools, cpuFlavors, dataCenters }`, each a list replacing the default one. A GPU type may set `vcpusPerGpu` and `memoryGbPerGpu`, what one GPU comes with (docs/catalog.md, "CPUs and memory of GPU instances").',
      defaultText: 'the built-in catalog',
    }),
  ),
  fleet: FleetSchema,
  networking: NetworkingSchema,
  pods: PodsSchema,
  jobs: JobsSchema,
  serverless: ServerlessSchema,
  runtime: RuntimeSchema,
  graphql: GraphqlSchema,
  quotas: QuotasSchema,
  ssh: SshSchema,
  metrics: MetricsSchema,
});

export type ConfigFile = StaticDecode<typeof ConfigFileSchema>;
