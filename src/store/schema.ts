/**
 * The database's tables, as Kysely sees them; each table's shape is in the file of its area
 * (`account-tables.ts`, `pod-tables.ts`, `endpoint-tables.ts`, `host-tables.ts`), shared by both
 * dialects. Conventions that keep one code path for SQLite and
 * PostgreSQL: timestamps are epoch milliseconds (bigint), booleans are 0/1 integers, structured
 * values are JSON text.
 */
import type { AccountsTable, ApiKeysTable, RegistriesTable, RegistryDelegationsTable } from './account-tables.js';
import type {
  EndpointReleasesTable,
  EndpointsTable,
  JobStreamTable,
  JobsTable,
  JobUsageTable,
  LbDemandTable,
  WebhookDeliveriesTable,
  WorkersTable,
  WorkerUsageTable,
} from './endpoint-tables.js';
import type {
  FleetJournalTable,
  HostGpusTable,
  HostOperationsTable,
  HostsTable,
  JoinTokensTable,
  SystemLogTable,
} from './host-tables.js';
import type {
  ClustersTable,
  NetworkVolumesTable,
  PodDeadlinesTable,
  PodsTable,
  PodUsageTable,
  TemplatesTable,
  VolumeUsageTable,
} from './pod-tables.js';

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  pods: PodsTable;
  clusters: ClustersTable;
  pod_usage: PodUsageTable;
  pod_deadlines: PodDeadlinesTable;
  worker_usage: WorkerUsageTable;
  volume_usage: VolumeUsageTable;
  templates: TemplatesTable;
  network_volumes: NetworkVolumesTable;
  registries: RegistriesTable;
  registry_delegations: RegistryDelegationsTable;
  endpoints: EndpointsTable;
  jobs: JobsTable;
  job_stream: JobStreamTable;
  job_usage: JobUsageTable;
  workers: WorkersTable;
  lb_demand: LbDemandTable;
  endpoint_releases: EndpointReleasesTable;
  webhook_deliveries: WebhookDeliveriesTable;
  join_tokens: JoinTokensTable;
  hosts: HostsTable;
  host_gpus: HostGpusTable;
  host_operations: HostOperationsTable;
  fleet_journal: FleetJournalTable;
  system_log: SystemLogTable;
}
