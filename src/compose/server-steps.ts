import type { Services } from '../services.js';
import type { AttachedInstance } from '../runtime/runtime.js';
import { OrphanCollector } from '../runtime/orphan-collector.js';
import {
  accountIsolationOf,
  isolationGapRefusal,
  MultiAccountRefused,
  multiAccountStartRefusal,
} from '../runtime/account-isolation.js';
import { configuredRuntime } from '../runtime/registry.js';
import type { RunningSshProxy } from '../ssh/start-ssh-proxy.js';
import type { RunningPodProxy } from '../proxy/start-pod-proxy.js';
import { Readiness } from '../http/readiness.js';
import { ServerCertificates } from '../http/tls-certificates.js';
import type { Step } from './lifecycle.js';
import { openListeners, type Listeners } from './listeners.js';

/** How often the API keys' last use is written (the column is read to the minute). */
const KEY_USE_FLUSH_MS = 30_000;

/** What the steps hand on to the ones after them, and to the running server. */
export interface StartState {
  readiness: Readiness;
  /** The admin key made on a first start (printed once), or null. */
  adminKey: string | null;
  /** What the runtime found running from before. */
  attached: AttachedInstance[];
  listeners: Listeners | null;
  /** Removes the instances found at start that nothing claims, once their grace has passed. */
  orphans: OrphanCollector;
  ssh: RunningSshProxy | null;
  /** The pod HTTP proxy, when it listens (config `proxy`). */
  proxy: RunningPodProxy | null;
  /** The certificates the listeners serve (`server.tls`), or null for plain HTTP. */
  certificates: ServerCertificates | null;
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

export function startState(services: Services): StartState {
  return {
    readiness: new Readiness(),
    adminKey: null,
    attached: [],
    listeners: null,
    orphans: new OrphanCollector({
      runtime: services.runtime,
      clock: services.clock,
      logger: services.logger.child({ component: 'orphans' }),
      claimed: instanceClaims(services),
      config: { graceMs: services.config.runtime.orphanGraceMs },
    }),
    ssh: null,
    proxy: null,
    certificates: null,
  };
}

/**
 * The server's start order, declared once: `startInOrder` walks it forward and stops it backward.
 * The server listens early and answers 503 to what needs adopted state until the `ready` step; the
 * instances are adopted after the listener opens, and workers are launched last, once there is a
 * URL for them to call. A step's stop undoes its start; where a close must come early (long-polls
 * and agent streams end before the listeners can close), the step that undoes it comes after the
 * listeners in this list.
 */
export function serverSteps(services: Services, state: StartState): Step[] {
  const { config, runtime, logger } = services;
  const isolation = accountIsolationOf(configuredRuntime(config).isolation(config), config);
  let accountCount = 0;
  let jobUrlBeforeListen = config.server.publicJobUrl;
  return [
    // opened by createServices; closed last
    { name: 'store', start: () => undefined, stop: () => services.db.close() },
    // built by createServices; detaches last but one (containers keep running; processes stop)
    { name: 'runtime', start: () => undefined, stop: () => runtime.close() },
    {
      name: 'accounts',
      start: async () => {
        state.adminKey = await bootstrapAdmin(services);
        accountCount = await services.accounts.store.countAccounts();
        services.accounts.startKeyUseFlush(KEY_USE_FLUSH_MS, (err) =>
          logger.warn({ err }, 'writing the API keys’ last use failed'),
        );
      },
      stop: () =>
        services.accounts
          .stopKeyUseFlush()
          .catch((err: unknown) => logger.warn({ err }, 'writing the API keys’ last use failed')),
    },
    {
      name: 'isolation',
      start: async () => {
        // The job URL's port may still be 0 here; its host, which decides the workers' network, is final.
        const refusal = multiAccountStartRefusal(accountCount, isolation);
        if (refusal) throw new MultiAccountRefused(refusal);
        // Containers may call the job API through the runtime's firewall (a port 0 is known after listen).
        jobUrlBeforeListen = config.server.publicJobUrl;
        if (new URL(jobUrlBeforeListen).port !== '0') await runtime.allowJobUrls?.([jobUrlBeforeListen]);
      },
      stop: () => undefined,
    },
    {
      name: 'replicas',
      start: async () => {
        await services.leases.start();
        await services.relay?.start();
      },
      stop: async () => {
        await services.relay?.close();
        await services.leases.close();
      },
    },
    {
      // stopped after the listeners close: what the last requests queued is committed first
      name: 'jobs',
      start: () => services.webhooks.start(),
      stop: async () => {
        await services.webhooks.stop();
        await services.jobs.flush();
      },
    },
    // The store-held gauges are read before the first request can move them.
    {
      name: 'metrics',
      start: async () => void (await services.metrics?.start()),
      stop: () => services.metrics?.stop(),
    },
    {
      name: 'listeners',
      start: async () => {
        // read here: a certificate that cannot be used fails the start, before anything listens
        state.certificates = config.server.tls ? new ServerCertificates(config.server.tls) : null;
        state.listeners = await openListeners(services, state.readiness, state.certificates);
        if (config.server.publicJobUrl !== jobUrlBeforeListen)
          await runtime.allowJobUrls?.([config.server.publicJobUrl]);
      },
      stop: () => state.listeners?.close(),
    },
    // Long-polls end (with what they have) before the listeners close, or the close waits for them.
    { name: 'long-polls', start: () => undefined, stop: () => services.jobs.signals.close() },
    {
      // The joined hosts enter the inventory before pods re-reserve what they hold on them; agents'
      // long-polls and streams end before the listeners close.
      name: 'fleet',
      start: async () => {
        await services.fleetWiring?.start();
        services.fleet.start();
      },
      stop: async () => {
        services.fleetWiring?.stop();
        services.fleetStreams?.close();
        await services.fleet.close();
      },
    },
    {
      name: 'attach',
      start: async () => {
        state.attached = await runtime.attach();
        if (state.attached.length > 0)
          logger.info({ instances: state.attached.length }, 'the runtime found instances of a previous server');
        const gapRefusal = isolationGapRefusal(accountCount, isolation, runtime.isolationGaps?.() ?? []);
        if (gapRefusal) throw new MultiAccountRefused(gapRefusal);
        services.fleetWiring?.followReplicas();
      },
      stop: () => undefined,
    },
    // What runs from before: pods and workers adopt theirs (before the server is ready, so
    // nothing new takes what they hold); what nobody claims is removed after the grace period.
    {
      name: 'pods',
      start: () => services.podController.start(state.attached),
      stop: () => services.podController.stop(),
    },
    // After the pods are restored: a stop or termination time that came while the server was down is acted on.
    {
      name: 'pod-deadlines',
      start: () => services.podDeadlines.start(),
      stop: () => services.podDeadlines.stop(),
    },
    { name: 'workers', start: () => services.autoscaler.adopt(state.attached), stop: () => services.autoscaler.stop() },
    { name: 'orphans', start: () => state.orphans.watch(state.attached), stop: () => state.orphans.stop() },
    { name: 'timekeeper', start: () => services.timekeeper.start(), stop: () => services.timekeeper.stop() },
    // From here requests are served; from its stop on they answer 503 again.
    { name: 'ready', start: () => state.readiness.markReady(), stop: () => state.readiness.markStopping() },
    {
      name: 'ssh',
      start: async () => {
        // Loaded here, after `ready`: the SSH library is a tenth of what a start loads.
        const { startSshProxy } = await import('../ssh/start-ssh-proxy.js');
        state.ssh = await startSshProxy(services);
      },
      stop: () => state.ssh?.close(),
    },
    {
      name: 'proxy',
      start: async () => {
        const { startPodProxy } = await import('../proxy/start-pod-proxy.js');
        state.proxy = await startPodProxy({
          ...services,
          proxyMeter: services.metrics?.proxyMeter() ?? null,
          lbMeter: services.metrics?.lbMeter() ?? null,
          tls: state.certificates,
        });
      },
      stop: () => state.proxy?.close(),
    },
    // Load-balancing workers' health checks (docs/load-balancing.md); waiting requests end at its stop.
    { name: 'load balancer', start: () => services.lb.start(), stop: () => services.lb.close() },
    // Replicas on PostgreSQL: workers other replicas launched, and this one's demand in the store.
    {
      name: 'load balancer replicas',
      start: () => services.lbReplicas?.start(),
      stop: () => services.lbReplicas?.stop(),
    },
    // Workers call back over HTTP: launch them only once the server listens (stopped with `workers`).
    { name: 'worker launches', start: () => services.autoscaler.start(), stop: () => undefined },
    // FlashBoot endpoints' images pulled ahead of time (serverless/image-prepull.ts).
    { name: 'image pre-pull', start: () => services.prepull.start(), stop: () => services.prepull.stop() },
  ];
}
