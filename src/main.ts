import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino, { type Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import { systemClock, type Clock } from './domain/clock.js';
import { EventBus } from './events.js';
import { openDatabase, type Db } from './store/database.js';
import { DIR_MODE, tightenDataDir } from './store/data-dir-permissions.js';
import { SecretBox } from './store/secret-box.js';
import { AccountsService } from './accounts/accounts-service.js';
import { Inventory } from './inventory/inventory.js';
import { CatalogService } from './catalog/catalog-service.js';
import { TemplatesService } from './templates/templates-service.js';
import { VolumesService } from './volumes/volumes-service.js';
import { BillingService } from './billing/billing-service.js';
import { RegistriesService } from './registries/registries-service.js';
import { PodsService } from './pods/pods-service.js';
import { ClustersService } from './clusters/clusters-service.js';
import { ResourceQuota } from './quotas/resource-quota.js';
import { EndpointsService } from './serverless/endpoints-service.js';
import { WorkersRegistry } from './serverless/workers-registry.js';
import { JobsService } from './jobs/jobs-service.js';
import { JobSignals, type JobChannel } from './jobs/job-signals.js';
import { LEASE_NAMES, LocalLeases, PostgresLeases, type Leases } from './store/leases.js';
import { PostgresNotifyRelay } from './store/notify-relay.js';
import { SystemLog } from './logs/system-log.js';
import { LogStreams } from './logs/log-streams.js';
import { LogTargets } from './logs/log-targets.js';
import type { JobRequestCounts } from './domain/job-rate-limits.js';
import { Timekeeper } from './jobs/timekeeper.js';
import { WebhookDispatcher } from './serverless/webhook-dispatcher.js';
import { WebhookAddressPolicy } from './serverless/webhook-address-policy.js';
import { Autoscaler } from './serverless/autoscaler.js';
import { PodController } from './pods/pod-controller.js';
import { RegistryGuard, type ResolveAddresses } from './runtime/registry-guard.js';
import type { Host } from './domain/catalog.js';
import type { Runtime } from './runtime/runtime.js';
import { configuredRuntime, prepareRuntime } from './runtime/registry.js';
import { fixedHosts } from './runtime/host-feed.js';
import type { BuiltRuntime, RuntimePrepareDeps } from './runtime/runtime-module.js';
import { OrphanCollector } from './runtime/orphan-collector.js';
import {
  accountIsolationOf,
  isolationGapRefusal,
  MultiAccountRefused,
  multiAccountStartRefusal,
} from './runtime/account-isolation.js';
import type { Services } from './services.js';
import { createStores } from './stores.js';
import { buildApp, loggerOptions } from './http/app.js';
import { flushStdoutLog, stdoutLogOutput } from './logs/coalesced-output.js';
import { createJobListener } from './http/job-listener.js';
import { ConnectionCap } from './http/listener-limits.js';
import { followUnusedConnections } from './http/unused-connections.js';
import { FleetService, FLEET_TOPICS } from './fleet/fleet-service.js';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { FLEET_JOURNAL_TOPIC } from './fleet/fleet-journal.js';
import { startSshProxy, type RunningSshProxy } from './ssh/start-ssh-proxy.js';
import { Metrics } from './metrics/metrics.js';

export interface ServiceOverrides {
  clock?: Clock;
  logger?: Logger;
  runtime?: Runtime;
  /** The hosts placement uses with an overridden runtime; required with a runtime whose hosts are discovered (docker: its config has no fleet). @default the config's fleet */
  hosts?: Host[];
  /** The runtime's isolation defences (only the isolation tests take one away). @default all on */
  runtimeDefences?: RuntimePrepareDeps['defences'];
  db?: Db;
  /** How the registry policy resolves registry host names (runtime docker). @default the system resolver */
  registryResolver?: ResolveAddresses;
}

/** Reads the secret key from the config, or from `<dataDir>/secret.key`, creating it on first start. */
export function loadSecretBox(config: Config, logger: Logger): SecretBox {
  if (config.secretKey) return SecretBox.fromString(config.secretKey);
  const path = join(config.dataDir, 'secret.key');
  if (!existsSync(path)) {
    mkdirSync(config.dataDir, { recursive: true, mode: DIR_MODE });
    writeFileSync(path, SecretBox.generateKey() + '\n', { mode: 0o600 });
    chmodSync(path, 0o600);
    if (config.databaseUrl)
      logger.warn(
        { path },
        'generated a secret key in the data dir; replicas sharing this database must share it via GANTRY_SECRET_KEY',
      );
  }
  return SecretBox.fromString(readFileSync(path, 'utf8'));
}

export const openConfiguredDatabase = (config: Config): Promise<Db> =>
  openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, schema: config.databaseSchema });

/** Relay topic: webhook deliveries were enqueued on another replica. */
const WEBHOOKS_DUE = 'webhooks';
/** Relay topic: job API requests another replica admitted (key: account, endpoint, operation, window). */
const JOB_REQUESTS = 'job-requests';
/** How often the API keys' last use is written (the column is read to the minute). */
const KEY_USE_FLUSH_MS = 30_000;

/** The composition root: the only place that constructs adapters. */
export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<Services> {
  const clock = overrides.clock ?? systemClock;
  const logger = overrides.logger ?? pino(loggerOptions(config.server.logLevel), stdoutLogOutput());
  // Before the database opens: SQLite gives new -wal/-shm files the database file's mode.
  const tightened = tightenDataDir(config.dataDir);
  if (tightened.length > 0)
    logger.warn(
      { dataDir: config.dataDir, paths: tightened.slice(0, 50), count: tightened.length },
      `took group and other permissions off ${tightened.length} path(s) of the data dir: it holds secrets no other local user may read`,
    );
  // Before the database opens: a runtime that cannot start (its engine unreachable) leaves nothing open.
  const runtimeModule = configuredRuntime(config);
  if (overrides.runtime && !overrides.hosts && runtimeModule.hostSource === 'discovered')
    throw new Error(
      `createServices: a runtime given for runtime ${runtimeModule.kind} needs its hosts (overrides.hosts): the config declares none`,
    );
  const preparedRuntime = overrides.runtime
    ? null
    : await prepareRuntime(config, {
        logger,
        module: runtimeModule,
        ...(overrides.runtimeDefences ? { defences: overrides.runtimeDefences } : {}),
      });
  const db = overrides.db ?? (await openConfiguredDatabase(config));
  // Each store once, handed to the services that use it.
  const stores = createStores(db);
  const events = new EventBus();
  // Replicas sharing one PostgreSQL database: each control loop runs under a lease, and long-polls
  // are woken across replicas (DESIGN "Scale-out"). Connected by startServer.
  const sessions = db.capabilities.listenNotify ? db.sessions : undefined;
  const leases: Leases = sessions
    ? new PostgresLeases({ sessions, logger: logger.child({ component: 'leases' }) })
    : new LocalLeases();
  const relay = sessions ? new PostgresNotifyRelay({ sessions, logger: logger.child({ component: 'relay' }) }) : null;
  const signals = new JobSignals(relay ? { onLocal: relay.publish } : {});
  const secrets = loadSecretBox(config, logger);
  const accounts = new AccountsService({ store: stores.accounts, clock, quotas: config.quotas });
  const fleet = new FleetService({
    // Read at each report: a server started on port 0 learns its job URL's port once it listens.
    jobUrl: () => config.server.publicJobUrl,
    hosts: stores.hosts,
    operations: stores.operations,
    clock,
    secrets,
    catalog: config.catalog,
    config: config.agents,
    relay,
    logger: logger.child({ component: 'fleet' }),
  });
  // The runtime, built by its module (runtime/registry.ts) over what the platform gives every
  // runtime; the pods' usage calls reach the pod controller once the server runs. Only the replica
  // driving the pods writes usage.
  const podsLease = leases.lease(LEASE_NAMES.pods);
  const built: BuiltRuntime = preparedRuntime
    ? await preparedRuntime
        .create({
          config,
          clock,
          logger,
          db,
          relay,
          agents: fleet,
          usage: {
            pause: async (hostId, at) => (podsLease.isHeld() ? podController.pauseUsage(hostId, at) : undefined),
            resume: async (podIds, at) => (podsLease.isHeld() ? podController.resumeUsage(podIds, at) : undefined),
          },
        })
        .catch(async (err: unknown) => {
          if (!overrides.db) await db.close();
          throw err;
        })
    : { runtime: overrides.runtime!, hosts: fixedHosts(overrides.hosts ?? config.fleet) };
  const { runtime } = built;
  const inventory = new Inventory({ hosts: built.hosts, catalog: config.catalog, clock });
  const catalog = new CatalogService({ catalog: config.catalog, inventory });
  // Only a runtime that pulls images is held to the registry policy (the process runtime maps them through `images`).
  const registryGuard = runtimeModule.capabilities.imagePrePull
    ? new RegistryGuard({
        policy: config.runtime.docker.registries,
        ...(overrides.registryResolver ? { resolve: overrides.registryResolver } : {}),
      })
    : null;
  const templates = new TemplatesService({
    store: stores.templates,
    registries: stores.registries,
    clock,
    runtime,
    registryGuard,
  });
  const volumes = new VolumesService({ store: stores.volumes, clock, runtime, catalog: config.catalog });
  const registries = new RegistriesService({
    store: stores.registries,
    delegations: stores.registryDelegations,
    clock,
    secrets,
  });
  const billing = new BillingService({ store: stores.billing, clock });
  const systemLog = new SystemLog({ store: stores.systemLog, clock, logger });
  const podController = new PodController({
    store: stores.pods,
    runtime,
    inventory,
    registries,
    clock,
    events,
    logger: logger.child({ component: 'pods' }),
    lease: leases.lease(LEASE_NAMES.pods),
    config,
    systemLog,
  });
  const fleetWiring = built.fleetWiring ?? null;
  const fleetStreams = built.fleetStreams ?? null;
  const quota = new ResourceQuota({ holdings: stores.holdings, quotas: config.quotas, clock });
  const pods = new PodsService({
    controller: podController,
    inventory,
    runtime,
    templates,
    volumes,
    registries,
    accounts,
    clock,
    config,
    quota,
    registryGuard,
  });
  const clusters = new ClustersService({ store: stores.clusters, pods, clock, quotas: config.quotas });
  const endpoints = new EndpointsService({
    store: stores.endpoints,
    clock,
    templates,
    volumes,
    config,
    runtime,
    keys: accounts,
  });
  templates.addReferenceChecker(endpoints.templateReferenceChecker);
  // One policy for the submit-time check and the dispatcher, so they share the account count.
  const webhookAddresses = new WebhookAddressPolicy({
    mode: config.serverless.webhooks.privateAddresses,
    countAccounts: () => stores.accounts.countAccounts(),
    clock,
  });
  accounts.onAccountCreated(() => webhookAddresses.accountCreated());
  // Off (null) without a token: `/metrics` answers 404 and nothing is counted.
  const metrics = config.metrics.token
    ? new Metrics({
        db,
        logger: logger.child({ component: 'metrics' }),
        token: config.metrics.token,
        refreshMs: config.metrics.refreshMs,
        // only replicas sharing PostgreSQL move jobs this process does not see
        refreshJobs: db.capabilities.listenNotify,
      })
    : null;
  const jobs = new JobsService({
    db,
    clock,
    events,
    signals,
    webhookAddresses,
    quotas: config.quotas,
    ...(metrics ? { flow: metrics } : {}),
    logger: logger.child({ component: 'jobs' }),
    config: {
      retryBudget: config.jobs.retryBudget,
      heartbeatTimeoutMs: config.jobs.heartbeatTimeoutMs,
      maxBatchSize: config.jobs.maxBatchSize,
      commitConcurrency: config.jobs.commitConcurrency ?? (db.capabilities.multipleConnections ? 4 : 1),
    },
  });
  for (const warning of config.warnings) logger.warn(warning);
  const workers = new WorkersRegistry({
    store: stores.workers,
    clock,
    deadRetentionMs: config.jobs.deadWorkerRetentionMs,
    maxAttachedWorkers: config.jobs.workerRateLimits.attachedWorkers,
    heartbeatTimeoutMs: config.jobs.heartbeatTimeoutMs,
  });
  const timekeeper = new Timekeeper({
    jobs,
    workers,
    clock,
    logger: logger.child({ component: 'timekeeper' }),
    lease: leases.lease(LEASE_NAMES.timekeeper),
    config: config.jobs,
  });
  const webhooks = new WebhookDispatcher({
    store: stores.webhooks,
    accounts: stores.accounts,
    clock,
    events,
    logger: logger.child({ component: 'webhooks' }),
    lease: leases.lease(LEASE_NAMES.webhooks),
    config: config.serverless.webhooks,
    addressPolicy: webhookAddresses,
  });
  const autoscaler = new Autoscaler({
    store: stores.autoscaler,
    clock,
    runtime,
    inventory,
    jobs,
    workers,
    endpoints,
    accounts,
    volumes,
    registries,
    events,
    logger: logger.child({ component: 'autoscaler' }),
    lease: leases.lease(LEASE_NAMES.autoscaler),
    quota,
    systemLog,
    config: {
      autoscaler: config.serverless.autoscaler,
      catalog: config.catalog,
      // Read at each launch: a server started on port 0 learns its job URL's port once it listens.
      get publicUrl() {
        return config.server.publicJobUrl;
      },
      pingIntervalMs: config.jobs.pingIntervalMs,
    },
  });
  if (relay) {
    // A webhook enqueued here is delivered by the replica holding the webhooks lease: wake it
    // rather than leave the delivery to its next poll.
    for (const name of ['job:completed', 'job:failed', 'job:timed_out'] as const)
      events.on(name, (p) => {
        if (p.webhook) relay.publish(WEBHOOKS_DUE, '', 1);
      });
  }
  const countListeners = new Set<(key: string, count: number) => void>();
  const jobRequestCounts: JobRequestCounts | null = relay
    ? {
        publish: (key, count) => relay.publish(JOB_REQUESTS, key, count),
        subscribe: (listener) => {
          countListeners.add(listener);
          return () => countListeners.delete(listener);
        },
      }
    : null;
  relay?.deliverTo({
    deliver: (topic, key, count) => {
      if (topic === WEBHOOKS_DUE) return webhooks.wake();
      if (topic === JOB_REQUESTS) {
        for (const listener of countListeners) listener(key, count);
        return;
      }
      if (FLEET_TOPICS.includes(topic)) return fleet.deliver(topic, key);
      if (topic === FLEET_JOURNAL_TOPIC) return void fleetWiring?.pull();
      signals.deliver(topic as JobChannel, key, count);
      // A job queued on another replica may need a worker now, as a local `job:queued` would.
      if (topic === 'work') autoscaler.nudge();
    },
    wakeAll: () => {
      signals.wakeAll();
      fleet.wakeAll();
    },
  });
  if (metrics) {
    for (const [group, commits] of Object.entries({ ...jobs.groupCommits, ...stores.pods.groupCommits }))
      commits.observe(metrics.batchObserver(group));
    events.on('pod:status', ({ from, to, gpuTypeId }) => metrics.podStatus(from, to, gpuTypeId));
    metrics.useSources({
      workers: () => autoscaler.workerTotals(),
      decisions: () => autoscaler.decisions,
      gpus: () => inventory.gpuUsage(),
      webhooks: () => ({ ...webhooks.outcomes, inFlight: webhooks.inFlight }),
    });
  }
  await templates.seedPublic();
  const logs = new LogStreams({ runtime, systemLog, clock, maxStreamsPerAccount: config.quotas.logStreams });
  const logTargets = new LogTargets({ pods, podStore: podController.store, endpoints });
  return {
    config,
    db,
    clock,
    logger,
    events,
    secrets,
    runtime,
    accounts,
    catalog,
    inventory,
    pods,
    clusters,
    podController,
    templates,
    volumes,
    registries,
    billing,
    endpoints,
    jobs,
    workers,
    timekeeper,
    fleet,
    fleetWiring,
    fleetStreams,
    webhooks,
    autoscaler,
    leases,
    relay,
    jobRequestCounts,
    systemLog,
    logs,
    logTargets,
    metrics,
  };
}

/** On a first start (no accounts), creates the `admin` account and its key; answers the key to print once. */
export async function bootstrapAdmin(services: Services): Promise<string | null> {
  const { accounts, config } = services;
  if ((await accounts.store.countAccounts()) > 0) return null;
  const admin = await accounts.createAccount('admin');
  const created = await accounts.createKey(admin.id, {
    scope: 'write',
    name: 'admin (first start)',
    ...(config.bootstrapKey ? { presetKey: config.bootstrapKey } : {}),
  });
  return created.key;
}

/**
 * Of these instance ids, the ones a service has a record of: a pod that is not TERMINATED, a
 * launched worker whose row is not dead. The rest are orphans (runtime/orphan-collector.ts).
 */
export function instanceClaims(
  services: Pick<Services, 'podController' | 'autoscaler'>,
): (ids: readonly string[]) => Promise<Set<string>> {
  return async (ids) => {
    const wanted = new Set(ids);
    const claimed = new Set<string>();
    for (const pod of await services.podController.store.listActiveStates())
      if (wanted.has(pod.id)) claimed.add(pod.id);
    for (const worker of await services.autoscaler.store.launchedWorkers())
      if (wanted.has(worker.id)) claimed.add(worker.id);
    return claimed;
  };
}

export interface RunningServer {
  app: FastifyInstance;
  services: Services;
  /** Removes the instances found at start that nothing claims, once their grace has passed. */
  orphans: OrphanCollector;
  url: string;
  /** The job listener's URL, when `server.jobPort` is set. */
  jobUrl: string | null;
  /** The SSH proxy, when it listens (config `ssh`). */
  ssh: RunningSshProxy | null;
  close(): Promise<void>;
}

export interface StartOptions extends ServiceOverrides {
  /** Where the start-up lines for a person go (the admin key on a first start). @default stdout */
  print?: (text: string) => void;
}

/** Starts everything: store, control loops, HTTP listener. */
export async function startServer(config: Config, overrides: StartOptions = {}): Promise<RunningServer> {
  // the log's waiting lines first, so what is printed keeps its place among them
  const print =
    overrides.print ??
    ((text: string) => {
      flushStdoutLog();
      void process.stdout.write(text);
    });
  // How long each phase of the start took (the ready line carries them: adoption time is a figure operators watch).
  const phases: Record<string, number> = {};
  let mark = performance.now();
  const phase = (name: string): void => {
    const now = performance.now();
    phases[name] = Math.round(now - mark);
    mark = now;
  };
  const services = await createServices(config, overrides);
  phase('servicesMs');
  const adminKey = await bootstrapAdmin(services);
  // The job URL's port may still be 0 here; its host, which decides the workers' network, is final.
  const accounts = await services.accounts.store.countAccounts();
  const isolation = accountIsolationOf(configuredRuntime(config).isolation(config), config);
  const refuse = async (refusal: string): Promise<never> => {
    await services.runtime.close();
    await services.db.close();
    throw new MultiAccountRefused(refusal);
  };
  const refusal = multiAccountStartRefusal(accounts, isolation);
  if (refusal) await refuse(refusal);
  // Containers may call the job API through the runtime's firewall (a port 0 is known after listen).
  const jobUrlBeforeListen = config.server.publicJobUrl;
  if (new URL(jobUrlBeforeListen).port !== '0') await services.runtime.allowJobUrls?.([jobUrlBeforeListen]);
  // What runs from before: pods and workers adopt theirs (before the server listens, so nothing
  // new takes what they hold); what nobody claims is removed after the grace period.
  // The joined hosts enter the inventory before pods re-reserve what they hold on them.
  await services.fleetWiring?.start();
  const attached = await services.runtime.attach();
  if (attached.length > 0)
    services.logger.info({ instances: attached.length }, 'the runtime found instances of a previous server');
  const gapRefusal = isolationGapRefusal(accounts, isolation, services.runtime.isolationGaps?.() ?? []);
  if (gapRefusal) {
    services.fleetWiring?.stop();
    await refuse(gapRefusal);
  }
  phase('attachMs');
  await services.leases.start();
  await services.relay?.start();
  services.fleetWiring?.followReplicas();
  await services.podController.start(attached);
  await services.autoscaler.adopt(attached);
  phase('adoptMs');
  const orphans = new OrphanCollector({
    runtime: services.runtime,
    clock: services.clock,
    logger: services.logger.child({ component: 'orphans' }),
    claimed: instanceClaims(services),
    config: { graceMs: config.runtime.orphanGraceMs },
  });
  orphans.watch(attached);
  // The store-held gauges are read before the first request can move them.
  await services.metrics?.start();
  services.timekeeper.start();
  services.webhooks.start();
  services.fleet.start();
  const app = await buildApp(services, { logger: services.logger });
  await app.listen({ port: config.server.port, host: config.server.host });
  phase('listenMs');
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.server.port;
  const urlOf = (p: number): string =>
    `http://${config.server.host.includes(':') ? `[${config.server.host}]` : config.server.host}:${p}`;
  const url = urlOf(port);
  // One count per client address across both listeners.
  const unusedConnections = followUnusedConnections(app.server);
  const connectionCap = new ConnectionCap(config.server.maxConnectionsPerClient);
  connectionCap.guard(app.server);
  const jobListener = config.server.jobPort === null ? null : createJobListener(app, config.server);
  let jobUrl: string | null = null;
  if (jobListener) {
    await new Promise<void>((resolve, reject) => {
      jobListener.once('error', reject);
      jobListener.listen(config.server.jobPort!, config.server.host, () => resolve());
    });
    const jobAddress = jobListener.address();
    jobUrl = urlOf(typeof jobAddress === 'object' && jobAddress ? jobAddress.port : config.server.jobPort!);
    connectionCap.guard(jobListener);
  }
  // Agents dial back for streams (fleet-streams.ts) on either listener.
  const streams = services.fleetStreams;
  if (streams) {
    const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
      if (!streams.handleUpgrade(req, socket, head))
        socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    };
    app.server.on('upgrade', upgrade);
    jobListener?.on('upgrade', upgrade);
  }
  // Port 0 asked the system for a port: the derived public URLs learn it now (an explicit URL is kept).
  config.server.publicUrl = withBoundPort(config.server.publicUrl, port);
  config.server.publicJobUrl = withBoundPort(
    config.server.publicJobUrl,
    jobListener ? Number(new URL(jobUrl!).port) : port,
  );
  if (config.server.publicJobUrl !== jobUrlBeforeListen)
    await services.runtime.allowJobUrls?.([config.server.publicJobUrl]);
  let ssh: Awaited<ReturnType<typeof startSshProxy>> = null;
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await ssh?.close();
    services.jobs.signals.close();
    // Agents' long-polls end now (with what they have), or the listener's close waits for them.
    services.fleetWiring?.stop();
    services.fleetStreams?.close();
    await services.fleet.close();
    // agents' long-polls answer now (empty) rather than hold the shutdown
    if (jobListener) {
      const stopped = new Promise((resolve) => jobListener.close(resolve));
      jobListener.closeAllConnections();
      await stopped;
    }
    // a connection that never carried a request would hold the close until its headers timeout
    unusedConnections.closeUnused();
    // log streams follow until the client leaves: end them, or the close waits for them
    services.logs.close();
    await app.close();
    await orphans.stop();
    await services.metrics?.stop();
    await services.timekeeper.stop();
    await services.autoscaler.stop();
    await services.webhooks.stop();
    await services.jobs.flush();
    await services.accounts
      .stopKeyUseFlush()
      .catch((err: unknown) => services.logger.warn({ err }, 'writing the API keys’ last use failed'));
    await services.podController.stop();
    await services.relay?.close();
    await services.leases.close();
    await services.runtime.close();
    await services.db.close();
  };
  try {
    ssh = await startSshProxy(services);
    // Workers call back over HTTP: launch them only once the server listens.
    await services.autoscaler.start();
    services.accounts.startKeyUseFlush(KEY_USE_FLUSH_MS, (err) =>
      services.logger.warn({ err }, 'writing the API keys’ last use failed'),
    );
  } catch (err) {
    // What started is stopped again: a start that fails leaves nothing listening or running.
    await close().catch((closeErr: unknown) =>
      services.logger.warn({ err: closeErr }, 'closing after a failed start failed'),
    );
    throw err;
  }
  if (adminKey) {
    print(
      `\nGantry created the admin account. Its API key (shown only this once):\n\n  ${adminKey}\n\nexport GANTRY_API_KEY=${adminKey}\n\n`,
    );
  }
  if (jobUrl) print(`job API listening on ${jobUrl}\n`);
  if (ssh) print(`ssh proxy listening on ${ssh.address} (host key ${ssh.hostKey.fingerprint})\n`);
  const hosts = services.inventory.hosts();
  const where =
    configuredRuntime(config).describe?.(config, hosts) ?? `runtime: ${services.runtime.name}, hosts: ${hosts.length}`;
  print(`gantry listening on ${url} (store: ${services.db.dialect}, ${where})\n`);
  services.logger.info(
    { url, store: services.db.dialect, runtime: services.runtime.name, hosts: hosts.map((h) => h.id), startup: phases },
    'gantry is ready',
  );
  return {
    app,
    services,
    orphans,
    url,
    jobUrl,
    ssh,
    close,
  };
}

/** `url` with `port` in place of a port 0 (which no client can dial); any other URL as it is. */
function withBoundPort(url: string, port: number): string {
  try {
    const parsed = new URL(url);
    if (parsed.port !== '0') return url;
    parsed.port = String(port);
    return parsed.toString().replace(/\/+$/, '');
  } catch {
    return url;
  }
}
