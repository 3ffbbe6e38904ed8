import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Clock } from '../domain/clock.js';
import type { EventBus } from '../events.js';
import type { Runtime } from '../runtime/runtime.js';
import type { SystemLog } from '../logs/system-log.js';
import type { JobRequestCounts } from '../domain/job-rate-limits.js';
import type { FleetService } from '../fleet/fleet-service.js';
import type { FleetWiring } from '../fleet/fleet-wiring.js';
import type { TunnelCounts } from '../fleet/fleet-tunnels.js';
import { FLEET_TOPICS } from '../fleet/fleet-relay.js';
import { FLEET_JOURNAL_TOPIC } from '../fleet/fleet-journal.js';
import { LEASE_NAMES } from '../store/leases.js';
import { EndpointsService } from '../serverless/endpoints-service.js';
import { WorkersRegistry } from '../serverless/workers-registry.js';
import { WebhookDispatcher } from '../serverless/webhook-dispatcher.js';
import { WebhookAddressPolicy } from '../serverless/webhook-address-policy.js';
import { Autoscaler } from '../serverless/autoscaler.js';
import { ImagePrepull } from '../serverless/image-prepull.js';
import { LbPool } from '../serverless/lb-pool.js';
import { healthProbe } from '../serverless/lb-health.js';
import { LbReplicas, ReplicaTraffic } from '../serverless/lb-replicas.js';
import { lbWorkerPorts } from '../serverless/lb-worker-ports.js';
import { LbDemandStore } from '../store/lb-demand-store.js';
import { newId } from '../domain/ids.js';
import { JobsService } from '../jobs/jobs-service.js';
import type { JobChannel } from '../jobs/job-signals.js';
import { Timekeeper } from '../jobs/timekeeper.js';
import { Metrics } from '../metrics/metrics.js';
import type { Storage } from './storage.js';
import type { CatalogArea } from './catalog.js';
import type { PodsArea } from './pods.js';

/** Relay topic: webhook deliveries were enqueued on another replica. */
const WEBHOOKS_DUE = 'webhooks';
/** Relay topic: job API requests another replica admitted (key: account, endpoint, operation, window). */
const JOB_REQUESTS = 'job-requests';
/** Relay topic: a replica wrote load-balancing requests waiting for a worker (the autoscaler's replica passes now). */
const LB_WAITING = 'lb-waiting';
/** A load-balancing worker's row changed (launched, suspended, resumed, stopped): the others read the table now. */
const LB_MEMBERS = 'lb-members';

export interface ServerlessArea {
  endpoints: EndpointsService;
  metrics: Metrics | null;
  jobs: JobsService;
  workers: WorkersRegistry;
  timekeeper: Timekeeper;
  webhooks: WebhookDispatcher;
  autoscaler: Autoscaler;
  lb: LbPool;
  /** Load balancing across replicas sharing the database (PostgreSQL); null with SQLite. */
  lbReplicas: LbReplicas | null;
  /** FlashBoot endpoints' images pulled ahead of time. */
  prepull: ImagePrepull;
}

interface Parts {
  clock: Clock;
  logger: Logger;
  events: EventBus;
  runtime: Runtime;
  systemLog: SystemLog;
}

/** Serverless endpoints, the job queue and its loops, webhooks, the autoscaler, and the metrics over them. */
export function assembleServerless(
  config: Config,
  storage: Storage,
  catalog: CatalogArea,
  podsArea: PodsArea,
  { clock, logger, events, runtime, systemLog }: Parts,
): ServerlessArea {
  const { db, stores, leases, signals } = storage;
  const { templates, volumes, accounts, inventory, registries } = catalog;
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
  // Load-balancing endpoints' workers: their health, the requests they hold (docs/load-balancing.md).
  const lb = new LbPool({
    probe: healthProbe(runtime, config.proxy.loadBalancer.healthTimeoutMs),
    now: () => clock.now(),
    log: (workerId, line) => void systemLog.write(workerId, line),
    wanted: () => autoscaler.nudge(),
    logger: logger.child({ component: 'load-balancer' }),
    healthIntervalMs: config.proxy.loadBalancer.healthIntervalMs,
  });
  // Replicas sharing PostgreSQL: every replica balances every worker, and the autoscaler counts
  // every replica's requests (lb-replicas.ts). One process owning SQLite needs none of it.
  const lbDemand = db.capabilities.multipleConnections ? new LbDemandStore(db) : null;
  const replicaId = newId();
  const lbReplicas: LbReplicas | null = lbDemand
    ? new LbReplicas({
        store: lbDemand,
        pool: lb,
        replicaId,
        launchedHere: (workerId): boolean => autoscaler.launched(workerId),
        portsOf: async (accountId, endpointId) => {
          const endpoint = await endpoints.get(accountId, endpointId).catch(() => null);
          return endpoint ? lbWorkerPorts(endpoint, await endpoints.templateOf(endpoint)) : null;
        },
        now: () => clock.now(),
        logger: logger.child({ component: 'load-balancer' }),
        settings: config.proxy.loadBalancer.replicas,
      })
    : null;
  const scalingLease = leases.lease(LEASE_NAMES.autoscaler);
  const autoscaler = new Autoscaler({
    lb,
    ...(lbDemand && lbReplicas
      ? {
          traffic: new ReplicaTraffic({ pool: lb, store: lbDemand, replicaId, ttlMs: lbReplicas.settings.ttlMs }),
        }
      : {}),
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
    lease: scalingLease,
    quota: podsArea.quota,
    systemLog,
    config: {
      autoscaler: config.serverless.autoscaler,
      flashboot: config.serverless.flashboot,
      catalog: config.catalog,
      // Read at each launch: a server started on port 0 learns its job URL's port once it listens.
      get publicUrl() {
        return config.server.publicJobUrl;
      },
      pingIntervalMs: config.jobs.pingIntervalMs,
    },
  });
  // Its passes run on the replica that scales (the same lease).
  const prepull = new ImagePrepull({
    runtime,
    inventory,
    store: stores.autoscaler,
    endpoints,
    registries,
    catalog: config.catalog,
    lease: scalingLease,
    clock,
    logger: logger.child({ component: 'image-prepull' }),
    config: config.serverless.flashboot.prepull,
  });
  podsArea.suspendedWorkers.target = autoscaler.reclaim;
  return { endpoints, metrics, jobs, workers, timekeeper, webhooks, autoscaler, lb, lbReplicas, prepull };
}

/**
 * What replicas sharing PostgreSQL tell each other (the relay's topics), and the metrics' sources:
 * wired once every service that answers them exists. Answers the job request counts the replicas share.
 */
export function wireRelayAndMetrics(
  { relay, stores, signals }: Storage,
  serverless: ServerlessArea,
  parts: {
    events: EventBus;
    fleet: FleetService;
    fleetWiring: FleetWiring | null;
    /** the agents' tunnels (runtime fleet), for `/metrics` */
    fleetTunnels: { readonly open: TunnelCounts } | null;
    inventory: CatalogArea['inventory'];
  },
): JobRequestCounts | null {
  const { events, fleet, fleetWiring, fleetTunnels, inventory } = parts;
  const { webhooks, autoscaler, jobs, metrics, lbReplicas, workers } = serverless;
  if (relay) {
    // A worker being suspended is handed nothing on any replica (suspend-gate.ts).
    workers.gate.relayTo({ publish: relay.publish, flush: () => relay.flush() });
    lbReplicas?.onWaiting(() => relay.publish(LB_WAITING, '', 1));
    if (lbReplicas) serverless.lb.onAnnounce(() => relay.publish(LB_MEMBERS, '', 1));
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
      if (workers.gate.deliver(topic, key)) return;
      if (topic === WEBHOOKS_DUE) return webhooks.wake();
      if (topic === LB_WAITING) return autoscaler.nudge();
      if (topic === LB_MEMBERS) return lbReplicas?.told();
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
      workers.gate.forgetRelayed();
      lbReplicas?.told();
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
      tunnels: () => fleetTunnels?.open ?? null,
    });
  }
  return jobRequestCounts;
}
