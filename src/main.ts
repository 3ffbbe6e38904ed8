import pino from 'pino';
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import { systemClock } from './domain/clock.js';
import { EventBus } from './events.js';
import type { Services } from './services.js';
import { loggerOptions } from './http/app.js';
import { flushStdoutLog, stdoutLogOutput } from './logs/coalesced-output.js';
import { SystemLog } from './logs/system-log.js';
import { LogStreams } from './logs/log-streams.js';
import { LogTargets } from './logs/log-targets.js';
import { configuredRuntime } from './runtime/registry.js';
import type { OrphanCollector } from './runtime/orphan-collector.js';
import type { RunningSshProxy } from './ssh/start-ssh-proxy.js';
import type { RunningPodProxy } from './proxy/start-pod-proxy.js';
import type { Readiness } from './http/readiness.js';
import { reloadCertificates, type ReloadOutcome } from './http/tls-certificates.js';
import type { ServiceOverrides } from './compose/overrides.js';
import { assembleStorage, openConfiguredDatabase, tightenData } from './compose/storage.js';
import { buildRuntime, entrypointsOf, prepareRuntimeArea, registryGuardFor } from './compose/runtime.js';
import { assembleCatalog } from './compose/catalog.js';
import { assembleFleetService } from './compose/fleet.js';
import { assemblePodController, assemblePods } from './compose/pods.js';
import { assembleServerless, wireRelayAndMetrics } from './compose/serverless.js';
import { startInOrder } from './compose/lifecycle.js';
import { serverSteps, startState } from './compose/server-steps.js';

export type { ServiceOverrides } from './compose/overrides.js';
export { loadSecretBox, openConfiguredDatabase } from './compose/storage.js';
export { bootstrapAdmin, instanceClaims } from './compose/server-steps.js';

/**
 * The composition root: the only place that constructs adapters. Each area assembles its part
 * (src/compose/); this function says in which order, and hands each what the earlier ones built.
 */
export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<Services> {
  const clock = overrides.clock ?? systemClock;
  const logger = overrides.logger ?? pino(loggerOptions(config.server.logLevel), stdoutLogOutput());
  tightenData(config, logger);
  // Before the database opens: a runtime that cannot start (its engine unreachable) leaves nothing open.
  const runtimeArea = await prepareRuntimeArea(config, overrides, { logger });
  const db = overrides.db ?? (await openConfiguredDatabase(config));
  const storage = assembleStorage(config, db, logger);
  const { stores, leases, relay, secrets } = storage;
  const events = new EventBus();
  const fleet = assembleFleetService(config, storage, { clock, logger });
  // The pods' usage calls reach the pod controller (built below, over the runtime) once the server runs.
  const built = await buildRuntime(config, overrides, runtimeArea, {
    storage,
    fleet,
    clock,
    logger,
    usage: {
      pause: (hostId, at) => podController.pauseUsage(hostId, at),
      resume: (podIds, at) => podController.resumeUsage(podIds, at),
    },
  });
  const { runtime } = built;
  const fleetWiring = built.fleetWiring ?? null;
  const fleetStreams = built.fleetStreams ?? null;
  const registryGuard = registryGuardFor(runtimeArea, config, overrides);
  const entrypoints = entrypointsOf(runtimeArea);
  const catalogArea = assembleCatalog(config, storage, {
    clock,
    runtime,
    hosts: built.hosts,
    registryGuard,
    entrypoints,
  });
  const { inventory, templates } = catalogArea;
  const systemLog = new SystemLog({ store: stores.systemLog, clock, logger });
  const podController = assemblePodController(config, storage, catalogArea, {
    clock,
    runtime,
    events,
    logger,
    systemLog,
  });
  const podsArea = assemblePods(config, storage, catalogArea, {
    clock,
    runtime,
    podController,
    registryGuard,
    entrypoints,
    logger,
  });
  const { pods, clusters, podDeadlines, podHttpTargets } = podsArea;
  const serverless = assembleServerless(config, storage, catalogArea, podsArea, {
    clock,
    logger,
    events,
    runtime,
    systemLog,
  });
  const jobRequestCounts = wireRelayAndMetrics(storage, serverless, {
    events,
    fleet,
    fleetWiring,
    fleetTunnels: built.fleetTunnels ?? null,
    inventory,
  });
  await templates.seedPublic();
  const logs = new LogStreams({ runtime, systemLog, clock, maxStreamsPerAccount: config.quotas.logStreams });
  const logTargets = new LogTargets({ pods, podStore: podController.store, endpoints: serverless.endpoints });
  return {
    config,
    db,
    clock,
    logger,
    events,
    secrets,
    runtime,
    ...catalogArea,
    pods,
    podHttpTargets,
    clusters,
    podController,
    podDeadlines,
    ...serverless,
    fleet,
    fleetWiring,
    fleetStreams,
    leases,
    relay,
    jobRequestCounts,
    systemLog,
    logs,
    logTargets,
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
  /** The pod HTTP proxy, when it listens (config `proxy`, docs/proxy.md). */
  proxy: RunningPodProxy | null;
  /** 503 to what needs adopted state until ready (`/readyz`). */
  readiness: Readiness;
  /** How long each step of the start took, ms, in start order (also on the ready line). */
  startup: Record<string, number>;
  /**
   * Reads the TLS certificate files again (SIGHUP): new connections get the new ones, open ones
   * go on; a file that cannot be used keeps the old ones. Logs what it did. Null without `server.tls`.
   */
  reloadCertificates(): ReloadOutcome | null;
  close(): Promise<void>;
}

export interface StartOptions extends ServiceOverrides {
  /** Where the start-up lines for a person go (the admin key on a first start). @default stdout */
  print?: (text: string) => void;
  /** Told of each step of the start order as it starts and as it stops (compose/server-steps.ts). */
  onStep?: (event: 'start' | 'stop', step: string) => void;
}

/** Starts everything in the declared order (compose/server-steps.ts); `close()` stops it in reverse. */
export async function startServer(config: Config, overrides: StartOptions = {}): Promise<RunningServer> {
  // the log's waiting lines first, so what is printed keeps its place among them
  const print =
    overrides.print ??
    ((text: string) => {
      flushStdoutLog();
      void process.stdout.write(text);
    });
  // From the process's start: node's own start and the modules' loading, before any step runs.
  const loadMs = Math.round(performance.now());
  const t0 = performance.now();
  const services = await createServices(config, overrides);
  const servicesMs = Math.round(performance.now() - t0);
  const state = startState(services);
  const started = await startInOrder(serverSteps(services, state), {
    onStep: (event, step) => {
      if (event === 'start') state.readiness.starting(step);
      overrides.onStep?.(event, step);
    },
    onStopError: (step, err) => services.logger.warn({ err, step }, 'a step of the server failed to stop'),
  });
  const { listeners, ssh, proxy } = state;
  const startup = { loadMs, servicesMs, ...started.times };
  const url = listeners!.url;
  if (state.adminKey) {
    print(
      `\nGantry created the admin account. Its API key (shown only this once):\n\n  ${state.adminKey}\n\nexport GANTRY_API_KEY=${state.adminKey}\n\n`,
    );
  }
  if (listeners!.jobUrl) print(`job API listening on ${listeners!.jobUrl}\n`);
  if (ssh) print(`ssh proxy listening on ${ssh.address} (host key ${ssh.hostKey.fingerprint})\n`);
  if (proxy) print(`pod HTTP proxy listening on ${proxy.url} (pods' URLs under ${config.proxy.publicUrl})\n`);
  const hosts = services.inventory.hosts();
  const where =
    configuredRuntime(config).describe?.(config, hosts) ?? `runtime: ${services.runtime.name}, hosts: ${hosts.length}`;
  print(`gantry listening on ${url} (store: ${services.db.dialect}, ${where})\n`);
  services.logger.info(
    { url, store: services.db.dialect, runtime: services.runtime.name, hosts: hosts.map((h) => h.id), startup },
    'gantry is ready',
  );
  return {
    app: listeners!.app,
    services,
    orphans: state.orphans,
    url,
    jobUrl: listeners!.jobUrl,
    ssh,
    proxy,
    readiness: state.readiness,
    startup,
    reloadCertificates: () => reloadCertificates(state.certificates, services.logger),
    close: () => started.stop(),
  };
}
