import type { DownloadLimits } from '../fleet/download-gate.js';
import type { Catalog } from '../domain/catalog.js';
import type { Quotas } from '../domain/rate-windows.js';
import type { PodEventSource } from '../pods/pod-events.js';
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import type { Runtime } from '../runtime/runtime.js';
import type { AccountsService } from '../accounts/accounts-service.js';
import type { CatalogService } from '../catalog/catalog-service.js';
import type { Inventory } from '../inventory/inventory.js';
import type { PodsService } from '../pods/pods-service.js';
import type { ClustersService } from '../clusters/clusters-service.js';
import type { PodController } from '../pods/pod-controller.js';
import type { TemplatesService } from '../templates/templates-service.js';
import type { VolumesService } from '../volumes/volumes-service.js';
import type { BillingService } from '../billing/billing-service.js';
import type { RegistriesService } from '../registries/registries-service.js';
import type { EndpointsService } from '../serverless/endpoints-service.js';
import type { WebhookDispatcher } from '../serverless/webhook-dispatcher.js';
import type { LbPool } from '../serverless/lb-pool.js';
import type { ImagePrepull } from '../serverless/image-prepull.js';
import type { LbReplicas } from '../serverless/lb-replicas.js';
import type { Autoscaler } from '../serverless/autoscaler.js';
import type { WorkersRegistry } from '../serverless/workers-registry.js';
import type { JobsService } from '../jobs/jobs-service.js';
import type { Timekeeper } from '../jobs/timekeeper.js';
import type { JobRequestCounts } from '../domain/job-rate-limits.js';
import type { FleetService } from '../fleet/fleet-service.js';
import type { FleetStreams } from '../fleet/fleet-streams.js';
import type { FleetWiring } from '../fleet/fleet-wiring.js';
import type { SystemLog } from '../logs/system-log.js';
import type { LogStreams } from '../logs/log-streams.js';
import type { LogTargets } from '../logs/log-targets.js';
import type { Metrics } from '../metrics/metrics.js';
import type { PodHttpTargets } from '../pods/pod-http-targets.js';
import type { ProxyListenerSettings } from './proxy-settings.js';

/** Bounds on a GraphQL document (config file `graphql`; the meaning and default of each: docs/configuration.md). */
export interface GraphqlLimits {
  maxDocumentBytes: number;
  maxDepth: number;
  maxAliases: number;
  maxFields: number;
  maxRootFields: number;
  maxCost: number;
}

/** What the transports read of the config (docs/configuration.md): the root hands them this slice of its `Config`. */
interface TransportConfig {
  server: {
    host: string;
    publicUrl: string;
    publicJobUrl: string;
    /** The job-only listener's port; null when there is none. */
    jobPort: number | null;
    bodyLimit: number;
    logLevel: string;
    requestTimeoutMs: number;
    headersTimeoutMs: number;
    keepAliveTimeoutMs: number;
    maxConnectionsPerClient: number;
    /** Peers whose X-Forwarded-* headers are believed (`server.trustedProxies`). */
    trustedProxies: string[];
  };
  rateLimits: Quotas;
  /** The pod HTTP proxy's listener (docs/proxy.md). */
  proxy: ProxyListenerSettings;
  jobs: {
    rateLimits: boolean;
    rateLimitPerWorker: number;
    takeWaitMs: number;
    stopWaitMs: number;
    workerRateLimits: { perWorker: number; perEndpoint: number; attachedWorkers: number };
  };
  /** `anonymousCatalog`: queries without a key may read the catalog's root fields (src/graphql/anonymous-catalog.ts). */
  graphql: GraphqlLimits & { anonymousCatalog: boolean };
  catalog: Catalog;
  /** The agent's public downloads at once (`fleet.downloads`). */
  agents: { downloads: DownloadLimits };
}

/** Everything the transports (HTTP, GraphQL, the SSH proxy) reach: services, never stores or the database. The composition root's `Services` (src/services.ts) is one. */
export interface TransportServices {
  config: TransportConfig;
  clock: Clock;
  logger: Logger;
  events: PodEventSource;
  runtime: Runtime;
  accounts: AccountsService;
  catalog: CatalogService;
  inventory: Inventory;
  pods: PodsService;
  /** The pod ports the pod HTTP proxy's names stand for (docs/proxy.md). */
  podHttpTargets: PodHttpTargets;
  /** Multi-node clusters over the pods (REST /v2/clusters, docs/clusters.md). */
  clusters: ClustersService;
  podController: PodController;
  templates: TemplatesService;
  volumes: VolumesService;
  registries: RegistriesService;
  /** What the account spent per time bucket (REST /v2/billing*, docs/billing.md). */
  billing: BillingService;
  endpoints: EndpointsService;
  webhooks: WebhookDispatcher;
  autoscaler: Autoscaler;
  /** Load-balancing endpoints' workers and their traffic (docs/load-balancing.md). */
  lb: LbPool;
  /** Load balancing across replicas sharing PostgreSQL (lb-replicas.ts); null with SQLite. */
  lbReplicas: LbReplicas | null;
  /** FlashBoot endpoints' images pulled ahead of time (image-prepull.ts). */
  prepull: ImagePrepull;
  jobs: JobsService;
  workers: WorkersRegistry;
  timekeeper: Timekeeper;
  /** Joined hosts and their agents' protocol (docs/fleet.md). */
  fleet: FleetService;
  /** runtime fleet: the fleet's events wired to the inventory and the runtime; null otherwise. */
  fleetWiring: FleetWiring | null;
  /** runtime fleet: streams to the agents (an instance's output, a shell); null otherwise. */
  fleetStreams: FleetStreams | null;
  /** Job API request counts shared across replicas (PostgreSQL only), so the spec 8.1 rates hold per user. */
  jobRequestCounts: JobRequestCounts | null;
  /** The platform's lines about pods and workers (the `system` log source). */
  systemLog: SystemLog;
  /** Log streams (docs/logs.md) and what they may read. */
  logs: LogStreams;
  logTargets: LogTargets;
  /** Prometheus metrics (`GET /metrics`, docs/metrics.md); null when no token is configured. */
  metrics: Metrics | null;
}
