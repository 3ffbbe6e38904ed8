import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Clock } from '../domain/clock.js';
import type { EntrypointSupport } from '../domain/start-command.js';
import type { EventBus } from '../events.js';
import type { Runtime } from '../runtime/runtime.js';
import type { RegistryGuard } from '../runtime/registry-guard.js';
import type { SystemLog } from '../logs/system-log.js';
import { LEASE_NAMES } from '../store/leases.js';
import { PodController } from '../pods/pod-controller.js';
import { PodsService } from '../pods/pods-service.js';
import { PodHttpTargets } from '../pods/pod-http-targets.js';
import { podHttpUrls } from '../pods/pod-http-urls.js';
import { PodProxyNames } from '../pods/pod-proxy-names.js';
import { PodDeadlineSweep } from '../pods/pod-deadline-sweep.js';
import { ClustersService } from '../clusters/clusters-service.js';
import { ResourceQuota } from '../quotas/resource-quota.js';
import { LateWorkerReclaim } from '../serverless/worker-reclaim.js';
import type { Storage } from './storage.js';
import type { CatalogArea } from './catalog.js';

/** The pod controller alone: the fleet's wiring (compose/fleet.ts) needs it before the pods service. */
export function assemblePodController(
  config: Config,
  { stores, leases }: Storage,
  catalog: CatalogArea,
  parts: { clock: Clock; runtime: Runtime; events: EventBus; logger: Logger; systemLog: SystemLog },
): PodController {
  const { clock, runtime, events, logger, systemLog } = parts;
  return new PodController({
    store: stores.pods,
    runtime,
    inventory: catalog.inventory,
    registries: catalog.registries,
    clock,
    events,
    logger: logger.child({ component: 'pods' }),
    lease: leases.lease(LEASE_NAMES.pods),
    config,
    systemLog,
  });
}

export interface PodsArea {
  quota: ResourceQuota;
  pods: PodsService;
  clusters: ClustersService;
  /** Acts on pods' own stop and termination times. */
  podDeadlines: PodDeadlineSweep;
  /** The pod ports the pod HTTP proxy's names stand for (docs/proxy.md). */
  podHttpTargets: PodHttpTargets;
  /** Removes suspended workers a pod's placement took back: the autoscaler's, once it exists. */
  suspendedWorkers: LateWorkerReclaim;
}

/** Pods and the clusters made of them, over the pod controller. */
export function assemblePods(
  config: Config,
  { stores, leases, secrets }: Storage,
  catalog: CatalogArea,
  parts: {
    clock: Clock;
    runtime: Runtime;
    podController: PodController;
    registryGuard: RegistryGuard | null;
    entrypoints: EntrypointSupport;
    logger: Logger;
  },
): PodsArea {
  const { clock, runtime, podController, registryGuard, entrypoints, logger } = parts;
  const { inventory, templates, volumes, registries, accounts } = catalog;
  const quota = new ResourceQuota({ holdings: stores.holdings, quotas: config.quotas, clock });
  const proxyNames = new PodProxyNames(secrets.derive('pod-proxy'));
  const podHttpTargets = new PodHttpTargets({
    pods: stores.pods,
    accountExists: async (accountId) => (await stores.accounts.getAccount(accountId)) !== null,
    names: proxyNames,
    now: () => clock.now(),
  });
  const suspendedWorkers = new LateWorkerReclaim();
  const pods = new PodsService({
    suspendedWorkers,
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
    entrypoints,
    deadlines: stores.podDeadlines,
    logger: logger.child({ component: 'pods' }),
    httpUrl: podHttpUrls(proxyNames, config.proxy, () => clock.now()),
  });
  const clusters = new ClustersService({ store: stores.clusters, pods, clock, quotas: config.quotas });
  const podDeadlines = new PodDeadlineSweep({
    deadlines: stores.podDeadlines,
    pods: stores.pods,
    act: (podId, action, options) => podController.act(podId, action, options),
    clock,
    lease: leases.lease(LEASE_NAMES.pods),
    logger: logger.child({ component: 'pod-deadlines' }),
    quota,
    intervalMs: config.pods.reconcileIntervalMs,
  });
  return { quota, pods, clusters, podDeadlines, podHttpTargets, suspendedWorkers };
}
