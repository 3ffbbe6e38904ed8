import { sql, type Kysely, type Migration } from 'kysely';
import { registryDelegationsTable } from '../registry-delegations.js';
import { initialTables } from '../tables.js';
import {
  backfillWebhookReceivers,
  jobsRetriedIndex,
  serverlessTables,
  webhookDeliveriesByJob,
  webhookFairness,
} from '../serverless-tables.js';
import { jobUsagePostgres } from '../job-usage.js';
import { workerIdentity } from '../worker-identity.js';
import { workerAllocation } from '../worker-allocation.js';
import { fleetJournalTable, fleetTables } from '../fleet-tables.js';
import { systemLogTable } from '../system-log.js';
import { podSshToken } from '../pod-ssh-token.js';
import { billingUsageTables } from '../billing-usage.js';
import { clusterTables } from '../clusters.js';
import { endpointReleases } from '../endpoint-releases.js';
import { statusChangeMinCuda } from '../status-change-min-cuda.js';
import { jobTakenSeq } from '../job-taken-seq.js';

const run = async (db: Kysely<unknown>, statements: string[]): Promise<void> => {
  for (const s of statements) await sql.raw(s).execute(db);
};

/** PostgreSQL migrations, applied in key order. */
export const postgresMigrations: Record<string, Migration> = {
  '0001-initial': { up: (db) => run(db, initialTables({ big: 'BIGINT', real: 'DOUBLE PRECISION' })) },
  '0002-serverless': { up: (db) => run(db, serverlessTables({ big: 'BIGINT', real: 'DOUBLE PRECISION' })) },
  '0003-webhook-deliveries-by-job': { up: (db) => run(db, webhookDeliveriesByJob()) },
  '0004-jobs-retried': { up: (db) => run(db, jobsRetriedIndex()) },
  '0005-worker-identity': { up: (db) => run(db, workerIdentity('postgres')) },
  '0006-job-usage': { up: (db) => run(db, jobUsagePostgres()) },
  '0007-webhook-fairness': {
    up: async (db) => {
      await run(db, webhookFairness());
      await backfillWebhookReceivers(db);
    },
  },
  '0008-worker-allocation': { up: (db) => run(db, workerAllocation()) },
  '0009-fleet': { up: (db) => run(db, fleetTables({ big: 'BIGINT', real: 'DOUBLE PRECISION' })) },
  '0010-fleet-journal': { up: (db) => run(db, fleetJournalTable('postgres')) },
  '0011-system-log': { up: (db) => run(db, systemLogTable('postgres')) },
  '0012-pod-ssh-token': { up: (db) => run(db, podSshToken('postgres')) },
  '0013-billing-usage': { up: (db) => run(db, billingUsageTables('postgres')) },
  '0014-endpoint-releases': { up: (db) => run(db, endpointReleases('postgres')) },
  '0015-registry-delegations': { up: (db) => run(db, registryDelegationsTable('postgres')) },
  '0016-clusters': { up: (db) => run(db, clusterTables('postgres')) },
  // SQLite's per-row insert trigger became a per-batch upsert; PostgreSQL's statement trigger stays
  '0017-job-usage-insert-by-batch': { up: async () => {} },
  '0018-status-change-min-cuda': { up: (db) => run(db, statusChangeMinCuda('postgres')) },
  '0019-job-taken-seq': { up: (db) => run(db, jobTakenSeq('postgres')) },
};
