/**
 * Migration `0006-job-usage`: per-account counters of what the job quotas count — jobs IN_QUEUE,
 * and bytes of job inputs, outputs, errors and buffered stream chunks — kept by triggers, so every
 * statement that inserts, changes or deletes jobs or stream chunks (submissions, takes, results,
 * cancels, purges, the timekeeper's sweeps) keeps them exact in its own transaction, and the
 * submit path reads a small table instead of counting jobs.
 *
 * `job_usage` has one row per account and *shard*; an account's figures are the sum over its
 * shards. SQLite has one writer: one shard (0), row triggers. PostgreSQL: statement triggers over
 * transition tables (one upsert per statement, not per row), each connection writing its own shard
 * (`pg_backend_pid()`): concurrent transactions never wait on, or deadlock over, a counter row.
 * The timekeeper folds the shards back into shard 0 once a minute (`JobUsageStore.foldShards`).
 *
 * `job_stream` gains `account_id`, so a chunk deleted after its job (the sweeps delete jobs first)
 * is still charged back to its account.
 */

/** Bytes a job row stores: input, output, error. */
const rowBytes = (r: string): string =>
  `octet_length(${r}.input) + coalesce(octet_length(${r}.output), 0) + coalesce(octet_length(${r}.error), 0)`;

const backfill = (shard: string): string[] => [
  `UPDATE job_stream SET account_id = (SELECT account_id FROM jobs WHERE jobs.id = job_stream.job_id)`,
  `INSERT INTO job_usage (account_id, shard, queued_jobs, stored_bytes)
    SELECT account_id, ${shard}, sum(queued), sum(bytes) FROM (
      SELECT account_id, CASE WHEN status = 'IN_QUEUE' THEN 1 ELSE 0 END AS queued, ${rowBytes('jobs')} AS bytes FROM jobs
      UNION ALL
      SELECT account_id, 0, octet_length(output) FROM job_stream WHERE account_id IS NOT NULL
    ) AS u GROUP BY account_id`,
];

const table = (big: string): string[] => [
  `ALTER TABLE job_stream ADD COLUMN account_id TEXT`,
  `CREATE TABLE job_usage (
    account_id TEXT NOT NULL,
    shard ${big} NOT NULL,
    queued_jobs ${big} NOT NULL DEFAULT 0,
    stored_bytes ${big} NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, shard)
  )`,
];

export const jobUsageSqlite = (): string[] => [
  ...table('INTEGER'),
  ...backfill('0'),
  `CREATE TRIGGER jobs_usage_insert AFTER INSERT ON jobs BEGIN
    INSERT INTO job_usage (account_id, shard, queued_jobs, stored_bytes)
      VALUES (NEW.account_id, 0, NEW.status = 'IN_QUEUE', ${rowBytes('NEW')})
      ON CONFLICT (account_id, shard) DO UPDATE SET queued_jobs = queued_jobs + excluded.queued_jobs, stored_bytes = stored_bytes + excluded.stored_bytes;
  END`,
  // a row exists for every account with a job: its insert made it
  `CREATE TRIGGER jobs_usage_update AFTER UPDATE OF status, output, error ON jobs
    WHEN OLD.status IS NOT NEW.status OR OLD.output IS NOT NEW.output OR OLD.error IS NOT NEW.error BEGIN
    UPDATE job_usage SET queued_jobs = queued_jobs + (NEW.status = 'IN_QUEUE') - (OLD.status = 'IN_QUEUE'),
      stored_bytes = stored_bytes + (${rowBytes('NEW')}) - (${rowBytes('OLD')})
      WHERE account_id = NEW.account_id AND shard = 0;
  END`,
  `CREATE TRIGGER jobs_usage_delete AFTER DELETE ON jobs BEGIN
    UPDATE job_usage SET queued_jobs = queued_jobs - (OLD.status = 'IN_QUEUE'), stored_bytes = stored_bytes - (${rowBytes('OLD')})
      WHERE account_id = OLD.account_id AND shard = 0;
  END`,
  `CREATE TRIGGER job_stream_usage_insert AFTER INSERT ON job_stream WHEN NEW.account_id IS NOT NULL BEGIN
    INSERT INTO job_usage (account_id, shard, queued_jobs, stored_bytes) VALUES (NEW.account_id, 0, 0, octet_length(NEW.output))
      ON CONFLICT (account_id, shard) DO UPDATE SET stored_bytes = stored_bytes + excluded.stored_bytes;
  END`,
  `CREATE TRIGGER job_stream_usage_delete AFTER DELETE ON job_stream WHEN OLD.account_id IS NOT NULL BEGIN
    UPDATE job_usage SET stored_bytes = stored_bytes - octet_length(OLD.output) WHERE account_id = OLD.account_id AND shard = 0;
  END`,
];

/**
 * A statement trigger's function: upserts the per-account deltas `select` answers (account_id,
 * queued, bytes) into this connection's shard. A statement trigger fires even when its statement
 * touched no row, and an UPDATE one cannot be limited to columns (PostgreSQL refuses column lists
 * with transition tables): every job-stop poll's `UPDATE … SET stop_requested` fires it, mostly on
 * no row. `rows`, the transition table, is checked first, so such a statement costs one empty scan,
 * not the join and upsert.
 */
const pgFunction = (
  name: string,
  rows: string,
  select: string,
): string => `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM ${rows}) THEN RETURN NULL; END IF;
  INSERT INTO job_usage AS u (account_id, shard, queued_jobs, stored_bytes)
    SELECT d.account_id, pg_backend_pid(), d.queued, d.bytes FROM (${select}) AS d WHERE d.queued <> 0 OR d.bytes <> 0 ORDER BY d.account_id
    ON CONFLICT (account_id, shard) DO UPDATE SET queued_jobs = u.queued_jobs + excluded.queued_jobs, stored_bytes = u.stored_bytes + excluded.stored_bytes;
  RETURN NULL;
END $$`;

const pgTrigger = (name: string, event: string, on: string, transitions: string): string =>
  `CREATE TRIGGER ${name} AFTER ${event} ON ${on} REFERENCING ${transitions} FOR EACH STATEMENT EXECUTE FUNCTION ${name}()`;

const queued = (r: string): string => `CASE WHEN ${r}.status = 'IN_QUEUE' THEN 1 ELSE 0 END`;

export const jobUsagePostgres = (): string[] => [
  ...table('BIGINT'),
  ...backfill('0'),
  pgFunction(
    'jobs_usage_insert',
    'jobs_new',
    `SELECT n.account_id, sum(${queued('n')}) AS queued, sum(${rowBytes('n')}) AS bytes FROM jobs_new n GROUP BY n.account_id`,
  ),
  pgTrigger('jobs_usage_insert', 'INSERT', 'jobs', 'NEW TABLE AS jobs_new'),
  pgFunction(
    'jobs_usage_update',
    'jobs_new',
    `SELECT n.account_id, sum(${queued('n')} - ${queued('o')}) AS queued, sum((${rowBytes('n')}) - (${rowBytes('o')})) AS bytes
      FROM jobs_new n JOIN jobs_old o ON o.id = n.id GROUP BY n.account_id`,
  ),
  pgTrigger('jobs_usage_update', 'UPDATE', 'jobs', 'OLD TABLE AS jobs_old NEW TABLE AS jobs_new'),
  pgFunction(
    'jobs_usage_delete',
    'jobs_old',
    `SELECT o.account_id, -sum(${queued('o')}) AS queued, -sum(${rowBytes('o')}) AS bytes FROM jobs_old o GROUP BY o.account_id`,
  ),
  pgTrigger('jobs_usage_delete', 'DELETE', 'jobs', 'OLD TABLE AS jobs_old'),
  pgFunction(
    'job_stream_usage_insert',
    'stream_new',
    `SELECT n.account_id, 0 AS queued, sum(octet_length(n.output)) AS bytes FROM stream_new n WHERE n.account_id IS NOT NULL GROUP BY n.account_id`,
  ),
  pgTrigger('job_stream_usage_insert', 'INSERT', 'job_stream', 'NEW TABLE AS stream_new'),
  pgFunction(
    'job_stream_usage_delete',
    'stream_old',
    `SELECT o.account_id, 0 AS queued, -sum(octet_length(o.output)) AS bytes FROM stream_old o WHERE o.account_id IS NOT NULL GROUP BY o.account_id`,
  ),
  pgTrigger('job_stream_usage_delete', 'DELETE', 'job_stream', 'OLD TABLE AS stream_old'),
];

/**
 * Migration `0017-job-usage-insert-by-batch` (SQLite): the per-row `jobs_usage_insert` trigger
 * goes; the job insert (`JobRows`, the only statement that inserts jobs) adds its batch's deltas
 * itself, one upsert per account in the same transaction as the rows. The counters are exact as
 * before: until this migration the trigger kept them, from it every insert path adds what it
 * inserted. The other triggers (updates, deletes, stream chunks) stay. PostgreSQL keeps its
 * statement trigger (one upsert per statement already): nothing to change there.
 */
export const jobUsageInsertByBatchSqlite = (): string[] => [`DROP TRIGGER jobs_usage_insert`];
