import type { Db } from './store/database.js';
import { AccountStore } from './store/account-store.js';
import { AutoscalerStore } from './store/autoscaler-store.js';
import { BillingStore } from './store/billing-store.js';
import { ClusterStore } from './store/cluster-store.js';
import { EndpointStore } from './store/endpoint-store.js';
import { PodDeadlineStore } from './store/pod-deadline-store.js';
import { PodStore } from './store/pod-store.js';
import { RegistryStore } from './store/registry-store.js';
import { RegistryDelegationStore } from './store/registry-delegation-store.js';
import { ResourceHoldingsStore } from './store/resource-holdings.js';
import { SystemLogStore } from './store/system-log-store.js';
import { TemplateStore } from './store/template-store.js';
import { VolumeStore } from './store/volume-store.js';
import { WebhookStore } from './store/webhook-store.js';
import { WorkerStore } from './store/worker-store.js';
import { HostStore } from './fleet/host-store.js';
import { OperationStore } from './fleet/operation-store.js';

/**
 * One store per aggregate over one database, built once by the composition root (`createServices`,
 * the CLI's `withStore`) and handed to the services that use them. The job store's parts are built
 * by the jobs service.
 */
export interface Stores {
  accounts: AccountStore;
  autoscaler: AutoscalerStore;
  /** Usage intervals, read by billing. */
  billing: BillingStore;
  clusters: ClusterStore;
  endpoints: EndpointStore;
  hosts: HostStore;
  /** What each account holds (pods, workers, volumes), for the quotas. */
  holdings: ResourceHoldingsStore;
  operations: OperationStore;
  pods: PodStore;
  /** Pods' own stop and termination times. */
  podDeadlines: PodDeadlineStore;
  registries: RegistryStore;
  /** ECR delegations (`/v2/registries/delegations`). */
  registryDelegations: RegistryDelegationStore;
  systemLog: SystemLogStore;
  templates: TemplateStore;
  volumes: VolumeStore;
  /** The webhook deliveries outbox. */
  webhooks: WebhookStore;
  /** The `workers` table as the workers registry sees it. */
  workers: WorkerStore;
}

export function createStores(db: Db): Stores {
  return {
    accounts: new AccountStore(db),
    autoscaler: new AutoscalerStore(db),
    billing: new BillingStore(db),
    clusters: new ClusterStore(db),
    endpoints: new EndpointStore(db),
    hosts: new HostStore(db),
    holdings: new ResourceHoldingsStore(db),
    operations: new OperationStore(db),
    pods: new PodStore(db),
    podDeadlines: new PodDeadlineStore(db),
    registries: new RegistryStore(db),
    registryDelegations: new RegistryDelegationStore(db),
    systemLog: new SystemLogStore(db),
    templates: new TemplateStore(db),
    volumes: new VolumeStore(db),
    webhooks: new WebhookStore(db),
    workers: new WorkerStore(db),
  };
}
