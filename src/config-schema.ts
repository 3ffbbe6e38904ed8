/**
 * The config file's schema: every key once, with its type, default, environment variable and
 * description. The sections of the runtimes are declared beside them (`runtime`:
 * runtime/runtime-config.ts over each runtime's `config.ts`; `fleet`: fleet/config.ts) and
 * composed here with the rest. config-decode.ts validates against it, config.ts derives the
 * `Config` types from it (`StaticDecode`), and config-reference.ts writes docs/configuration.md
 * from it.
 */
import { ProxySchema } from './config-proxy.js';
import { TlsSchema, trustedProxiesField } from './config-tls.js';
import { Type, type StaticDecode } from '@sinclair/typebox';
import { amount, atLeast, choice, count, flag, listenPort, orNull, text } from './config-fields.js';
import { FleetSchema } from './fleet/config.js';
import { RuntimeSchema } from './runtime/runtime-config.js';

/** The SDKs give up on a long-poll after 90 s (wire-protocol §1): one is held at most 85 s. */
const MAX_LONG_POLL_HOLD_MS = 85_000;

export const ServerSchema = Type.Object(
  {
    host: text('127.0.0.1', 'Listen address. `--host`.', { env: 'GANTRY_HOST' }),
    port: amount(8080, 'Listen port. `--port`.', { env: 'PORT' }),
    publicUrl: Type.Optional(
      Type.String({
        description: 'Base URL clients use to reach this server (REST, GraphQL, docs).',
        env: 'GANTRY_PUBLIC_URL',
        defaultText: '`http://<host>:<port>` (`https://` with `tls`)',
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
      "Connections one client address may hold open at once; more are answered 429 and closed (over TLS, closed before the handshake). 0: no cap. Every client behind a reverse proxy or NAT shares one address, as do the process runtime's workers (loopback; the Node worker library opens a connection per job in flight): size it for those, or set 0 behind a proxy that caps clients itself.",
    ),
    tls: TlsSchema,
    trustedProxies: trustedProxiesField(),
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
  reconcileIntervalMs: amount(
    1000,
    'How often the pod controller reconciles, and how often pods’ own stop and termination times are checked.',
  ),
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

const FlashbootSchema = Type.Object(
  {
    maxKeepMs: amount(
      600_000,
      'Longest time a FlashBoot endpoint\'s idle worker is kept suspended (frozen, resumed by the next job) before it is removed; an endpoint keeps its workers for its own keep time (`flashBootKeepSeconds`, 10 minutes by default), or this if shorter, applied at each pass (docs/serverless.md, "FlashBoot").',
    ),
    suspendedPricePerGpuHour: amount(
      0,
      'USD per GPU per hour a suspended FlashBoot worker is billed at, instead of its running rate (it holds its GPUs, reclaimable by placement; a CPU worker\'s suspended time is free). Default 0: suspended time is not billed (docs/serverless.md, "FlashBoot").',
    ),
    prepull: Type.Object(
      {
        intervalMs: amount(
          15_000,
          'How often FlashBoot endpoints\' images are pulled ahead of time on the hosts their workers may run on, and pre-pulled images no FlashBoot endpoint uses are removed; 0 turns pre-pulling off (docs/serverless.md, "Pre-pulled images").',
        ),
        diskBudgetGb: amount(
          100,
          "What pre-pulled images may take together on one host, GB, shared max-min fairly between the accounts that want images there; what does not fit an account's share is not pre-pulled.",
        ),
      },
      { description: "Pre-pulling FlashBoot endpoints' images." },
    ),
  },
  { description: 'FlashBoot: idle workers of endpoints with `flashboot` on are suspended, not stopped.' },
);

const ServerlessSchema = Type.Object({
  webhooks: WebhooksSchema,
  autoscaler: AutoscalerSchema,
  flashboot: FlashbootSchema,
});

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
    anonymousCatalog: flag(
      true,
      "Whether a query without an API key may read the catalog (root fields `gpuTypes`, `dataCenters`, `countryCodes`, `cpuFlavors`, `serverlessGpuPools` only), as the platform answers dstack's offer queries (gpuhunt sends no key). Such callers are rate-limited per client address. `false`: every request needs a key.",
    ),
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
    port: listenPort(
      'The port it listens on, on `server.host`; 0 picks a free one.',
      'GANTRY_SSH_PORT',
      '2222, or 0 when `server.port` is 0',
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
        'The catalog: `{ gpuTypes, pools, cpuFlavors, dataCenters }`, each a list replacing the default one. A GPU type may set `vcpusPerGpu` and `memoryGbPerGpu`, what one GPU comes with (docs/catalog.md, "CPUs and memory of GPU instances"), and `secureSpotPrice` / `communitySpotPrice`, the least an interruptible pod may bid per GPU per hour (default 40% of the on-demand price; docs/pods.md).',
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
  proxy: ProxySchema,
  metrics: MetricsSchema,
});

export type ConfigFile = StaticDecode<typeof ConfigFileSchema>;
