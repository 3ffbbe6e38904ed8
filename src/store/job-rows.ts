import { sql } from 'kysely';
import type { Db, Executor } from './database.js';
import { ShapedStatements } from './database.js';
import { toJobRecord, type JobRecord, type NewJob } from './job-record.js';
import type { JobsTable } from './schema.js';
import { INSERT_CHUNK } from './job-sql.js';

/** A new job's row: what `insertMany` writes, minus the columns that start NULL or at their default. */
const INSERT_NEW_JOB = `INSERT INTO jobs (id, endpoint_id, account_id, status, seq, input, webhook, s3_config, execution_timeout_ms,
  low_priority, ttl_ms, sync, created_at, queued_at, expires_at) VALUES (?, ?, ?, 'IN_QUEUE', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

/** Job rows written by submissions, and read by id. */
export class JobRows {
  constructor(private readonly db: Db) {}

  /** Inserts submitted jobs, IN_QUEUE, in as few statements as the dialect allows. */
  async insertMany(jobs: readonly NewJob[], tx: Executor = this.db.kysely): Promise<void> {
    for (let i = 0; i < jobs.length; i += INSERT_CHUNK) {
      const chunk = jobs.slice(i, i + INSERT_CHUNK);
      if (!this.db.capabilities.inProcess) {
        // one fixed statement over column arrays: the server parses the same text every time,
        // and the client sends 13 parameters instead of 25 per job
        const col = <T>(f: (j: NewJob) => T): T[] => chunk.map(f);
        await sql`INSERT INTO jobs (id, endpoint_id, account_id, status, seq, input, webhook, s3_config, execution_timeout_ms,
            low_priority, ttl_ms, sync, created_at, queued_at, expires_at)
          SELECT id, endpoint_id, account_id, 'IN_QUEUE', seq, input, webhook, s3_config, execution_timeout_ms,
            low_priority, ttl_ms, sync, created_at, created_at, expires_at
          FROM unnest(${col((j) => j.id)}::text[], ${col((j) => j.endpointId)}::text[], ${col((j) => j.accountId)}::text[],
            ${col((j) => j.seq)}::bigint[], ${col((j) => j.inputJson)}::text[], ${col((j) => j.webhook)}::text[],
            ${col((j) => j.s3ConfigJson)}::text[], ${col((j) => j.policy.executionTimeout)}::bigint[],
            ${col((j) => (j.policy.lowPriority ? 1 : 0))}::int[], ${col((j) => j.policy.ttl)}::bigint[], ${col((j) => (j.sync ? 1 : 0))}::int[],
            ${col((j) => j.createdAt)}::bigint[], ${col((j) => j.createdAt + j.policy.ttl)}::bigint[])
            AS t(id, endpoint_id, account_id, seq, input, webhook, s3_config, execution_timeout_ms, low_priority, ttl_ms, sync, created_at, expires_at)`.execute(
          tx,
        );
        continue;
      }
      const rows = chunk.map((j) => ({
        id: j.id,
        endpoint_id: j.endpointId,
        account_id: j.accountId,
        status: 'IN_QUEUE',
        seq: j.seq,
        input: j.inputJson,
        webhook: j.webhook,
        s3_config: j.s3ConfigJson,
        execution_timeout_ms: j.policy.executionTimeout,
        low_priority: j.policy.lowPriority ? 1 : 0,
        ttl_ms: j.policy.ttl,
        sync: j.sync ? 1 : 0,
        created_at: j.createdAt,
        queued_at: j.createdAt,
        started_at: null,
        completed_at: null,
        expires_at: j.createdAt + j.policy.ttl,
        retain_until: null,
        timeout_at: null,
        output: null,
        error: null,
        worker_id: null,
        retries: 0,
        delay_ms: null,
        execution_ms: null,
        stop_requested: 0,
      }));
      // one prepared single-row insert, run per job: no SQL to build or parse per batch
      for (const row of rows)
        await this.#shapes.run(tx, 'insert-job', () => tx.insertInto('jobs').values(row), Object.values(row));
    }
  }

  readonly #shapes = new ShapedStatements();

  /**
   * Inserts submitted jobs, IN_QUEUE, and commits them: the group commit's write. On SQLite one
   * synchronous transaction rebinds a prepared INSERT per job, binding only the columns a new job
   * sets (the rest take their defaults); elsewhere one INSERT over column arrays per chunk (in a
   * transaction when there are several).
   */
  async insertCommitted(jobs: readonly NewJob[]): Promise<void> {
    const sync = this.db.syncTransaction;
    // one statement is its own transaction: no BEGIN and COMMIT round trips for a batch that fits
    if (!sync)
      return jobs.length <= INSERT_CHUNK
        ? this.insertMany(jobs)
        : this.db.withTransaction((tx) => this.insertMany(jobs, tx));
    return sync((raw) => {
      const stmt = raw.prepare<unknown[]>(INSERT_NEW_JOB);
      for (const j of jobs)
        stmt.run(
          j.id,
          j.endpointId,
          j.accountId,
          j.seq,
          j.inputJson,
          j.webhook,
          j.s3ConfigJson,
          j.policy.executionTimeout,
          j.policy.lowPriority ? 1 : 0,
          j.policy.ttl,
          j.sync ? 1 : 0,
          j.createdAt,
          j.createdAt,
          j.createdAt + j.policy.ttl,
        );
    });
  }

  async get(id: string, tx?: Executor): Promise<JobRecord | null> {
    const read = this.db.syncRead;
    if (!tx && read) {
      // the hottest read (every status, and every result post that found nothing to change)
      const row = await read((raw) => raw.prepare<[string], JobsTable>('SELECT * FROM jobs WHERE id = ?').get(id));
      return row ? toJobRecord(row) : null;
    }
    const row = await (tx ?? this.db.kysely).selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toJobRecord(row) : null;
  }

  async getMany(ids: readonly string[], tx: Executor = this.db.kysely): Promise<JobRecord[]> {
    if (ids.length === 0) return [];
    const rows = await tx
      .selectFrom('jobs')
      .selectAll()
      .where('id', 'in', [...ids])
      .execute();
    return rows.map(toJobRecord);
  }

  /** The largest `seq` ever stored (0 when none); seeds the in-process sequence after a restart. */
  async maxSeq(tx: Executor = this.db.kysely): Promise<number> {
    const row = await tx
      .selectFrom('jobs')
      .select((eb) => eb.fn.max('seq').as('m'))
      .executeTakeFirst();
    return Number(row?.m ?? 0);
  }
}
