/**
 * Every migration, once, in the order it is applied, with the step each dialect runs. A key is
 * recorded in `gantry_migrations` when its step has run: a key once released never changes (an
 * existing database would find it missing and refuse to start) and a new entry goes at the end
 * (`migrations.test.ts` checks both against the keys databases already hold).
 */
import { sql, type Kysely, type Migration } from 'kysely';
import { billingUsageTables } from './billing-usage.js';
import { clusterTables } from './clusters.js';
import { endpointFlashbootKeep } from './endpoint-flashboot-keep.js';
import { endpointInstanceIds } from './endpoint-instance-ids.js';
import { endpointReleases } from './endpoint-releases.js';
import { fleetJournalTable, fleetTables } from './fleet-tables.js';
import { jobTakenSeq } from './job-taken-seq.js';
import { lbDemandTable } from './lb-demand.js';
import { jobUsageInsertByBatchSqlite, jobUsagePostgres, jobUsageSqlite } from './job-usage.js';
import { podDeadlinesTable } from './pod-deadlines.js';
import { podBid } from './pod-bid.js';
import { podSshToken } from './pod-ssh-token.js';
import { registryDelegationsTable } from './registry-delegations.js';
import {
  backfillWebhookReceivers,
  jobsRetriedIndex,
  serverlessTables,
  webhookDeliveriesByJob,
  webhookFairness,
} from './serverless-tables.js';
import { statusChangeMinCuda } from './status-change-min-cuda.js';
import { systemLogTable } from './system-log.js';
import { initialTables, type DialectTypes } from './tables.js';
import { workerAllocation } from './worker-allocation.js';
import { workerIdentity } from './worker-identity.js';
import { workerSuspended } from './worker-suspended.js';

export type MigrationDialect = 'sqlite' | 'postgres';

type Step = (db: Kysely<unknown>) => Promise<void>;

export interface StoreMigration {
  /** The name recorded in `gantry_migrations`; its order among the keys is the order applied. */
  readonly key: string;
  readonly up: Readonly<Record<MigrationDialect, Step>>;
}

const TYPES: Record<MigrationDialect, DialectTypes> = {
  sqlite: { big: 'INTEGER', real: 'REAL' },
  postgres: { big: 'BIGINT', real: 'DOUBLE PRECISION' },
};

/** A step that runs `statements()`, built when the step runs. */
const run =
  (statements: () => string[]): Step =>
  async (db) => {
    for (const s of statements()) await sql.raw(s).execute(db);
  };

/** One step for both dialects, written once over the dialect's name. */
const each = (statements: (dialect: MigrationDialect) => string[]): Record<MigrationDialect, Step> => ({
  sqlite: run(() => statements('sqlite')),
  postgres: run(() => statements('postgres')),
});

const same = (step: Step): Record<MigrationDialect, Step> => ({ sqlite: step, postgres: step });

export const MIGRATIONS: readonly StoreMigration[] = [
  { key: '0001-initial', up: each((d) => initialTables(TYPES[d])) },
  { key: '0002-serverless', up: each((d) => serverlessTables(TYPES[d])) },
  { key: '0003-webhook-deliveries-by-job', up: each(webhookDeliveriesByJob) },
  { key: '0004-jobs-retried', up: each(jobsRetriedIndex) },
  { key: '0005-worker-identity', up: each(workerIdentity) },
  { key: '0006-job-usage', up: { sqlite: run(jobUsageSqlite), postgres: run(jobUsagePostgres) } },
  {
    key: '0007-webhook-fairness',
    up: same(async (db) => {
      await run(webhookFairness)(db);
      await backfillWebhookReceivers(db);
    }),
  },
  { key: '0008-worker-allocation', up: each(workerAllocation) },
  { key: '0009-fleet', up: each((d) => fleetTables(TYPES[d])) },
  { key: '0010-fleet-journal', up: each(fleetJournalTable) },
  { key: '0011-system-log', up: each(systemLogTable) },
  { key: '0012-pod-ssh-token', up: each(podSshToken) },
  { key: '0013-billing-usage', up: each(billingUsageTables) },
  { key: '0014-endpoint-releases', up: each(endpointReleases) },
  { key: '0015-registry-delegations', up: each(registryDelegationsTable) },
  { key: '0016-clusters', up: each(clusterTables) },
  // SQLite's per-row insert trigger became a per-batch upsert; PostgreSQL's statement trigger stays
  { key: '0017-job-usage-insert-by-batch', up: { sqlite: run(jobUsageInsertByBatchSqlite), postgres: async () => {} } },
  { key: '0018-status-change-min-cuda', up: each(statusChangeMinCuda) },
  { key: '0019-job-taken-seq', up: each(jobTakenSeq) },
  { key: '0020-pod-deadlines', up: each(podDeadlinesTable) },
  { key: '0021-endpoint-instance-ids', up: each(endpointInstanceIds) },
  { key: '0022-pod-bid', up: each(podBid) },
  { key: '0023-lb-demand', up: each(lbDemandTable) },
  { key: '0024-worker-suspended', up: each(workerSuspended) },
  { key: '0025-endpoint-flashboot-keep', up: each(endpointFlashbootKeep) },
];

/** The list as Kysely's migrator takes it, for one dialect. */
export const migrationsFor = (dialect: MigrationDialect): Record<string, Migration> =>
  Object.fromEntries(MIGRATIONS.map((m) => [m.key, { up: m.up[dialect] }]));
