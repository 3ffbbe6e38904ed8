import { sql, type Expression, type RawBuilder } from 'kysely';
import type SqliteDatabase from 'better-sqlite3';
import type { Db, Executor } from './database.js';
import { ShapedStatements } from './database.js';
import type { JobsTable } from './schema.js';
import { changesFrom, TIMED_OUT_ERROR, WORKER_LOST_ERROR, type JobStatus } from '../domain/job-state.js';
import type { JobPolicy } from '../domain/job-policy.js';

/**
 * The jobs aggregate: jobs, their stream buffer and the webhook outbox. One SQL operation per
 * method, `now` passed in, an optional `tx` to compose several in one transaction. Status guards
 * come from `changesFrom()` of the pure state machine, so every set-based update here is one of
 * its transitions. JSON columns travel as text (`…Json`): the hot path never parses what it only
 * passes on.
 */

export interface JobRecord {
  id: string;
  endpointId: string;
  accountId: string;
  status: JobStatus;
  /** Queue order within the endpoint (FIFO); a retried job gets a new one, a requeued job keeps its own. */
  seq: number;
  inputJson: string;
  webhook: string | null;
  /** Never returned by views; handed to the worker only. */
  s3ConfigJson: string | null;
  policy: JobPolicy;
  sync: boolean;
  createdAt: number;
  queuedAt: number;
  startedAt: number | null;
  completedAt: number | null;
  expiresAt: number;
  retainUntil: number | null;
  timeoutAt: number | null;
  outputJson: string | null;
  error: string | null;
  workerId: string | null;
  retries: number;
  delayMs: number | null;
  executionMs: number | null;
  /** 0 none, 1 the worker must be told to stop this job, 2 it was told. */
  stopRequested: 0 | 1 | 2;
}

/** What a submission writes; the rest of the record starts empty. */
export type NewJob = Pick<JobRecord, 'id' | 'endpointId' | 'accountId' | 'seq' | 'inputJson' | 'webhook' | 's3ConfigJson' | 'policy' | 'sync' | 'createdAt'>;

/** A worker's post about a job it holds. `IN_PROGRESS` is a progress update (output only). */
export interface WorkerResult {
  id: string;
  workerId: string;
  status: 'COMPLETED' | 'FAILED' | 'IN_PROGRESS';
  outputJson: string | null;
  error: string | null;
}

export interface QueueStats {
  inQueue: number;
  /** Queued jobs with `policy.lowPriority`; they do not call for more workers. */
  inQueueLowPriority: number;
  inProgress: number;
  completed: number;
  failed: number;
  cancelled: number;
  timedOut: number;
  /** Jobs (still stored) that went back to the queue at least once. */
  retried: number;
  /** created_at of the oldest queued job; null when the queue is empty. */
  oldestQueuedAt: number | null;
}

export interface JobRetention {
  /** How long a finished `/run` job stays readable. @default 1800000 (30 min) */
  runMs: number;
  /** How long a finished `/runsync` job stays readable. @default 60000 (1 min) */
  runsyncMs: number;
}

export const DEFAULT_RETENTION: JobRetention = { runMs: 30 * 60_000, runsyncMs: 60_000 };

export interface NewWebhookDelivery {
  id: string;
  jobId: string;
  url: string;
  payloadJson: string;
}

/** Rows per INSERT statement: well under SQLite's bound-parameter limit (32766). */
const INSERT_CHUNK = 500;

/** Jobs claimed per take statement: 3 parameters each, well under SQLite's limit. */
const TAKE_CHUNK = 2000;

/** Results applied per statement: 9 parameters each. */
const COMPLETE_CHUNK = 1000;

/** A bigint literal both dialects type correctly (PostgreSQL cannot infer `$1 + $2`). */
const big = (n: number): RawBuilder<number> => sql<number>`CAST(${n} AS BIGINT)`;

const toRecord = (r: JobsTable): JobRecord => ({
  id: r.id,
  endpointId: r.endpoint_id,
  accountId: r.account_id,
  status: r.status as JobStatus,
  seq: Number(r.seq),
  inputJson: r.input,
  webhook: r.webhook,
  s3ConfigJson: r.s3_config,
  policy: { executionTimeout: Number(r.execution_timeout_ms), lowPriority: r.low_priority === 1, ttl: Number(r.ttl_ms) },
  sync: r.sync === 1,
  createdAt: Number(r.created_at),
  queuedAt: Number(r.queued_at),
  startedAt: r.started_at === null ? null : Number(r.started_at),
  completedAt: r.completed_at === null ? null : Number(r.completed_at),
  expiresAt: Number(r.expires_at),
  retainUntil: r.retain_until === null ? null : Number(r.retain_until),
  timeoutAt: r.timeout_at === null ? null : Number(r.timeout_at),
  outputJson: r.output,
  error: r.error,
  workerId: r.worker_id,
  retries: Number(r.retries),
  delayMs: r.delay_ms === null ? null : Number(r.delay_ms),
  executionMs: r.execution_ms === null ? null : Number(r.execution_ms),
  stopRequested: Number(r.stop_requested) as 0 | 1 | 2,
});

const bySeq = (a: JobRecord, b: JobRecord): number => a.seq - b.seq;

/**
 * The one status an event applies to, for queries that must use a partial index: SQLite matches
 * `status = 'IN_PROGRESS'` to an index `WHERE status = 'IN_PROGRESS'`, but not `status IN (…)`
 * (the timeout sweep and lost-worker requeue scanned the whole table).
 */
function soleStatus(event: Parameters<typeof changesFrom>[0]): JobStatus {
  const from = changesFrom(event);
  if (from.length !== 1) throw new Error(`${event} applies to ${from.length} statuses; its query needs an index on status`);
  return from[0]!;
}

type SqliteStatement = SqliteDatabase.Statement<unknown[]>;

/** A new job's row: what `insertMany` writes, minus the columns that start NULL or at their default. */
const INSERT_NEW_JOB = `INSERT INTO jobs (id, endpoint_id, account_id, status, seq, input, webhook, s3_config, execution_timeout_ms,
  low_priority, ttl_ms, sync, created_at, queued_at, expires_at) VALUES (?, ?, ?, 'IN_QUEUE', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

export class JobStore {
  readonly retention: JobRetention;

  constructor(
    private readonly db: Db,
    options: { retention?: JobRetention } = {},
  ) {
    this.retention = options.retention ?? DEFAULT_RETENTION;
  }

  /** `now + retention`, chosen per row by its `sync` flag. */
  #retainUntil(now: number): Expression<number> {
    return sql<number>`CASE WHEN sync = 1 THEN ${big(now + this.retention.runsyncMs)} ELSE ${big(now + this.retention.runMs)} END`;
  }

  /** Inserts submitted jobs, IN_QUEUE, in as few statements as the dialect allows. */
  async insertMany(jobs: readonly NewJob[], tx: Executor = this.db.kysely): Promise<void> {
    for (let i = 0; i < jobs.length; i += INSERT_CHUNK) {
      const rows = jobs.slice(i, i + INSERT_CHUNK).map((j) => ({
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
      if (this.db.capabilities.inProcess) {
        // one prepared single-row insert, run per job: no SQL to build or parse per batch
        for (const row of rows) await this.#shapes.run(tx, 'insert-job', () => tx.insertInto('jobs').values(row), Object.values(row));
      } else {
        await tx.insertInto('jobs').values(rows).execute();
      }
    }
  }

  readonly #shapes = new ShapedStatements();
  #rawInsert: { raw: unknown; stmt: SqliteStatement } | null = null;

  /**
   * Inserts submitted jobs, IN_QUEUE, and commits them: the group commit's write. On SQLite one
   * synchronous transaction rebinds a prepared INSERT per job, binding only the columns a new job
   * sets (the rest take their defaults); elsewhere one multi-row INSERT per chunk.
   */
  async insertCommitted(jobs: readonly NewJob[]): Promise<void> {
    const sync = this.db.syncTransaction;
    if (!sync) return this.db.withTransaction((tx) => this.insertMany(jobs, tx));
    return sync((raw) => {
      if (this.#rawInsert?.raw !== raw) this.#rawInsert = { raw, stmt: raw.prepare<unknown[]>(INSERT_NEW_JOB) };
      const stmt = this.#rawInsert.stmt;
      for (const j of jobs)
        stmt.run(
          j.id, j.endpointId, j.accountId, j.seq, j.inputJson, j.webhook, j.s3ConfigJson,
          j.policy.executionTimeout, j.policy.lowPriority ? 1 : 0, j.policy.ttl, j.sync ? 1 : 0,
          j.createdAt, j.createdAt, j.createdAt + j.policy.ttl,
        );
    });
  }

  async get(id: string, tx: Executor = this.db.kysely): Promise<JobRecord | null> {
    const row = await tx.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  async getMany(ids: readonly string[], tx: Executor = this.db.kysely): Promise<JobRecord[]> {
    if (ids.length === 0) return [];
    const rows = await tx.selectFrom('jobs').selectAll().where('id', 'in', [...ids]).execute();
    return rows.map(toRecord);
  }

  /** The largest `seq` ever stored (0 when none); seeds the in-process sequence after a restart. */
  async maxSeq(tx: Executor = this.db.kysely): Promise<number> {
    const row = await tx.selectFrom('jobs').select((eb) => eb.fn.max('seq').as('m')).executeTakeFirst();
    return Number(row?.m ?? 0);
  }

  /**
   * Takes up to `n` queued, unexpired jobs of an endpoint in FIFO order for `workerId`: IN_PROGRESS,
   * started now, delay measured, execution deadline set. On PostgreSQL concurrent takers skip each
   * other's locked rows (`FOR UPDATE SKIP LOCKED`); on SQLite the single writer serializes them.
   */
  async takeNext(endpointId: string, workerId: string, n: number, now: number, tx?: Executor): Promise<JobRecord[]> {
    if (n <= 0) return [];
    const take = async (t: Executor) => (await this.takeMany([{ endpointId, workerId, n }], now, t))[0]!;
    return tx ? take(tx) : this.db.withTransaction(take);
  }

  /**
   * Several takes at once, in one transaction (what `takeNext` does for one request): per
   * endpoint, one read of the queue head (locking with SKIP LOCKED on PostgreSQL), then the jobs
   * are dealt out to the requests in order, FIFO. Answers the jobs of each request, in order.
   * Call it inside a transaction, so the rows read stay reserved until they are updated.
   */
  async takeMany(requests: ReadonlyArray<{ endpointId: string; workerId: string; n: number }>, now: number, tx: Executor): Promise<JobRecord[][]> {
    const results: JobRecord[][] = requests.map(() => []);
    const byEndpoint = new Map<string, number[]>();
    requests.forEach((r, i) => {
      if (r.n > 0) byEndpoint.set(r.endpointId, [...(byEndpoint.get(r.endpointId) ?? []), i]);
    });
    for (const [endpointId, indexes] of byEndpoint) {
      const total = indexes.reduce((sum, i) => sum + requests[i]!.n, 0);
      const head = tx
        .selectFrom('jobs')
        .select('id')
        .where('endpoint_id', '=', endpointId)
        .where('status', 'in', changesFrom('take'))
        .where('expires_at', '>', now)
        .orderBy('seq')
        .limit(total);
      const ids = (await (this.db.capabilities.skipLocked ? head.forUpdate().skipLocked() : head).execute()).map((r) => r.id);
      // Deal the head of the queue out to the requests in order, then claim it in ONE statement.
      const owner = new Map<string, number>();
      let offset = 0;
      for (const i of indexes) {
        for (const id of ids.slice(offset, offset + requests[i]!.n)) owner.set(id, i);
        offset += requests[i]!.n;
      }
      const claims = [...owner];
      for (let c = 0; c < claims.length; c += TAKE_CHUNK) {
        const chunk = claims.slice(c, c + TAKE_CHUNK);
        const workerCase = sql<string>`CASE id ${sql.join(
          chunk.map(([id, i]) => sql`WHEN ${id} THEN ${requests[i]!.workerId}`),
          sql` `,
        )} END`;
        const rows = await tx
          .updateTable('jobs')
          .set({
            status: 'IN_PROGRESS',
            worker_id: workerCase,
            started_at: now,
            delay_ms: sql<number>`${big(now)} - queued_at`,
            timeout_at: sql<number>`${big(now)} + execution_timeout_ms`,
            output: null,
            error: null,
          })
          .where('id', 'in', chunk.map(([id]) => id))
          .where('status', 'in', changesFrom('take'))
          .returningAll()
          .execute();
        for (const row of rows) results[owner.get(row.id)!]!.push(toRecord(row));
      }
    }
    for (const r of results) r.sort(bySeq);
    return results;
  }

  /**
   * Applies workers' posts, each guarded by "IN_PROGRESS on this worker": results finish the job
   * (execution time, retention deadline), progress replaces the visible output. Answers, per post
   * and in order, the job as changed — or null when its guard failed (late, repeated, foreign
   * post, or no such job) and nothing changed.
   *
   * The first result of each job is applied by one set-based statement per chunk; progress posts
   * and further posts for the same job follow one by one, in order — so a progress post in the
   * same batch as its job's result is dropped like any late progress.
   */
  async completeMany(results: readonly WorkerResult[], now: number, tx: Executor = this.db.kysely): Promise<Array<JobRecord | null>> {
    const changed: Array<JobRecord | null> = results.map(() => null);
    const finals = new Map<string, number>();
    const rest: number[] = [];
    results.forEach((r, i) => {
      if (r.status !== 'IN_PROGRESS' && !finals.has(r.id)) finals.set(r.id, i);
      else rest.push(i);
    });
    const firsts = [...finals.values()];
    for (let c = 0; c < firsts.length; c += COMPLETE_CHUNK) {
      const chunk = firsts.slice(c, c + COMPLETE_CHUNK).map((i) => results[i]!);
      const byId = <T>(value: (r: WorkerResult) => T) => sql<T>`CASE id ${sql.join(chunk.map((r) => sql`WHEN ${r.id} THEN ${value(r)}`), sql` `)} END`;
      const rows = await tx
        .updateTable('jobs')
        .set({
          status: byId((r) => r.status),
          output: byId((r) => (r.status === 'COMPLETED' ? r.outputJson : null)),
          error: byId((r) => (r.status === 'FAILED' ? r.error : null)),
          completed_at: now,
          execution_ms: sql<number>`${big(now)} - started_at`,
          retain_until: this.#retainUntil(now),
          timeout_at: null,
        })
        .where('id', 'in', chunk.map((r) => r.id))
        .where('status', 'in', changesFrom('complete'))
        .where('worker_id', '=', byId((r) => r.workerId))
        .returningAll()
        .execute();
      for (const row of rows) changed[finals.get(row.id)!] = toRecord(row);
    }
    for (const i of rest) {
      const r = results[i]!;
      const base = tx.updateTable('jobs').where('id', '=', r.id).where('status', 'in', changesFrom('complete')).where('worker_id', '=', r.workerId);
      const row =
        r.status === 'IN_PROGRESS'
          ? await base.set({ output: r.outputJson }).returningAll().executeTakeFirst()
          : await base
              .set({
                status: r.status,
                output: r.status === 'COMPLETED' ? r.outputJson : null,
                error: r.status === 'FAILED' ? r.error : null,
                completed_at: now,
                execution_ms: sql<number>`${big(now)} - started_at`,
                retain_until: this.#retainUntil(now),
                timeout_at: null,
              })
              .returningAll()
              .executeTakeFirst();
      changed[i] = row ? toRecord(row) : null;
    }
    return changed;
  }

  /**
   * Cancels a queued or running job (a running one also gets a stop request for its worker).
   * Answers the cancelled job, or null when it was neither queued nor running.
   */
  async cancel(id: string, now: number, tx: Executor = this.db.kysely): Promise<JobRecord | null> {
    const row = await tx
      .updateTable('jobs')
      .set({
        status: 'CANCELLED',
        stop_requested: sql<number>`CASE WHEN status = 'IN_PROGRESS' THEN 1 ELSE stop_requested END`,
        completed_at: now,
        execution_ms: sql<number>`CASE WHEN started_at IS NULL THEN NULL ELSE ${big(now)} - started_at END`,
        retain_until: this.#retainUntil(now),
        timeout_at: null,
      })
      .where('id', '=', id)
      .where('status', 'in', changesFrom('cancel'))
      .returningAll()
      .executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  /**
   * Requeues a FAILED or TIMED_OUT, unexpired job with the same id and input, at the back of the
   * queue (`seq`). Answers the requeued job, or null when the job was not retryable.
   */
  async retry(id: string, seq: number, now: number, tx: Executor = this.db.kysely): Promise<JobRecord | null> {
    const row = await tx
      .updateTable('jobs')
      .set({
        status: 'IN_QUEUE',
        seq,
        retries: sql<number>`retries + 1`,
        queued_at: now,
        worker_id: null,
        started_at: null,
        completed_at: null,
        retain_until: null,
        timeout_at: null,
        delay_ms: null,
        execution_ms: null,
        output: null,
        error: null,
        stop_requested: 0,
      })
      .where('id', '=', id)
      .where('status', 'in', changesFrom('retry'))
      .where('expires_at', '>', now)
      .returningAll()
      .executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  /**
   * Puts jobs a worker took but never received (its long-poll went away before the reply) back
   * at their place in the queue, as if never taken: no retry is counted.
   */
  async release(ids: readonly string[], workerId: string, tx: Executor = this.db.kysely): Promise<number> {
    if (ids.length === 0) return 0;
    const res = await tx
      .updateTable('jobs')
      .set({ status: 'IN_QUEUE', worker_id: null, started_at: null, timeout_at: null, delay_ms: null })
      .where('id', 'in', [...ids])
      .where('worker_id', '=', workerId)
      .where('status', '=', 'IN_PROGRESS')
      .executeTakeFirst();
    return Number(res.numUpdatedRows);
  }

  /** Deletes the endpoint's queued jobs (running and finished ones stay); answers how many. */
  async purgeQueue(endpointId: string, tx: Executor = this.db.kysely): Promise<number> {
    const res = await tx.deleteFrom('jobs').where('endpoint_id', '=', endpointId).where('status', '=', 'IN_QUEUE').executeTakeFirst();
    return Number(res.numDeletedRows);
  }

  /**
   * Deletes up to `limit` jobs whose ttl ended (any state) and up to `limit` finished jobs past
   * their retention, with their stream buffers. Answers the ids of each kind.
   */
  async expire(now: number, limit = 1000, tx: Executor = this.db.kysely): Promise<{ expired: string[]; purged: string[] }> {
    const expired = await tx
      .deleteFrom('jobs')
      .where('id', 'in', (eb) => eb.selectFrom('jobs').select('id').where('expires_at', '<=', now).limit(limit))
      .returning('id')
      .execute();
    const purged = await tx
      .deleteFrom('jobs')
      .where('id', 'in', (eb) => eb.selectFrom('jobs').select('id').where('retain_until', '<=', now).limit(limit))
      .returning('id')
      .execute();
    const ids = [...expired, ...purged].map((r) => r.id);
    if (ids.length) await tx.deleteFrom('job_stream').where('job_id', 'in', ids).execute();
    return { expired: expired.map((r) => r.id), purged: purged.map((r) => r.id) };
  }

  /**
   * Times out up to `limit` running jobs past their execution deadline: TIMED_OUT, stop requested.
   * Queue time never counts: the deadline is set when a worker takes the job.
   */
  async timeOut(now: number, limit = 1000, tx: Executor = this.db.kysely): Promise<JobRecord[]> {
    const rows = await tx
      .updateTable('jobs')
      .set({
        status: 'TIMED_OUT',
        error: TIMED_OUT_ERROR,
        stop_requested: 1,
        completed_at: now,
        execution_ms: sql<number>`${big(now)} - started_at`,
        retain_until: this.#retainUntil(now),
        timeout_at: null,
      })
      .where('id', 'in', (eb) =>
        eb.selectFrom('jobs').select('id').where('status', '=', soleStatus('timeout')).where('timeout_at', '<=', now).limit(limit),
      )
      .returningAll()
      .execute();
    return rows.map(toRecord);
  }

  /**
   * A worker was lost: its running jobs go back to the queue keeping their place (`seq`) with
   * `retries + 1`, or become FAILED once `retries` reached `retryBudget`.
   */
  async requeueFromWorker(
    workerId: string,
    now: number,
    retryBudget: number,
    tx: Executor = this.db.kysely,
  ): Promise<{ requeued: JobRecord[]; failed: JobRecord[] }> {
    const held = tx.updateTable('jobs').where('worker_id', '=', workerId).where('status', '=', soleStatus('worker-lost'));
    const requeued = await held
      .set({
        status: 'IN_QUEUE',
        retries: sql<number>`retries + 1`,
        queued_at: now,
        worker_id: null,
        started_at: null,
        timeout_at: null,
        delay_ms: null,
        output: null,
      })
      .where('retries', '<', retryBudget)
      .returningAll()
      .execute();
    const failed = await held
      .set({
        status: 'FAILED',
        error: WORKER_LOST_ERROR,
        completed_at: now,
        execution_ms: sql<number>`${big(now)} - started_at`,
        retain_until: this.#retainUntil(now),
        timeout_at: null,
      })
      .where('retries', '>=', retryBudget)
      .returningAll()
      .execute();
    return { requeued: requeued.map(toRecord), failed: failed.map(toRecord) };
  }

  /** Ids of jobs the worker must stop and has not been told about yet; marks them told. */
  async takeStopRequests(workerId: string, tx: Executor = this.db.kysely): Promise<string[]> {
    const rows = await tx
      .updateTable('jobs')
      .set({ stop_requested: 2 })
      .where('worker_id', '=', workerId)
      .where('stop_requested', '=', 1)
      .returning('id')
      .execute();
    return rows.map((r) => r.id).sort();
  }

  /** Exact counts of the endpoint's stored jobs by status. */
  async queueStats(endpointId: string, tx: Executor = this.db.kysely): Promise<QueueStats> {
    const rows = await tx
      .selectFrom('jobs')
      .select((eb) => [
        'status',
        eb.fn.countAll<number>().as('n'),
        eb.fn.sum<number>(sql<number>`CASE WHEN retries > 0 THEN 1 ELSE 0 END`).as('retried'),
        eb.fn.sum<number>('low_priority').as('low'),
        eb.fn.min<number>('created_at').as('oldest'),
      ])
      .where('endpoint_id', '=', endpointId)
      .groupBy('status')
      .execute();
    const stats: QueueStats = { inQueue: 0, inQueueLowPriority: 0, inProgress: 0, completed: 0, failed: 0, cancelled: 0, timedOut: 0, retried: 0, oldestQueuedAt: null };
    for (const r of rows) {
      const n = Number(r.n);
      stats.retried += Number(r.retried ?? 0);
      const status = r.status as JobStatus;
      switch (status) {
        case 'IN_QUEUE':
          stats.inQueue = n;
          stats.inQueueLowPriority = Number(r.low ?? 0);
          stats.oldestQueuedAt = r.oldest === null ? null : Number(r.oldest);
          break;
        case 'IN_PROGRESS':
          stats.inProgress = n;
          break;
        case 'COMPLETED':
          stats.completed = n;
          break;
        case 'FAILED':
          stats.failed = n;
          break;
        case 'CANCELLED':
          stats.cancelled = n;
          break;
        case 'TIMED_OUT':
          stats.timedOut = n;
          break;
        default:
          ((x: never) => x)(status);
      }
    }
    return stats;
  }

  /** Buffers stream chunks (JSON text each) in `seq` order. */
  async appendStream(jobId: string, chunks: ReadonlyArray<{ seq: number; outputJson: string }>, now: number, tx: Executor = this.db.kysely): Promise<void> {
    if (chunks.length === 0) return;
    await tx
      .insertInto('job_stream')
      .values(chunks.map((c) => ({ job_id: jobId, seq: c.seq, output: c.outputJson, created_at: now })))
      .execute();
  }

  /** Removes and answers the buffered chunks of a job, oldest first (JSON text each). */
  async drainStream(jobId: string, tx?: Executor): Promise<string[]> {
    const run = async (t: Executor): Promise<string[]> => {
      const rows = await t.selectFrom('job_stream').select(['seq', 'output']).where('job_id', '=', jobId).orderBy('seq').execute();
      const last = rows.at(-1);
      if (!last) return [];
      await t.deleteFrom('job_stream').where('job_id', '=', jobId).where('seq', '<=', Number(last.seq)).execute();
      return rows.map((r) => r.output);
    };
    return tx ? run(tx) : this.db.withTransaction(run);
  }

  /** Writes webhook calls to the outbox; the dispatcher delivers them after the commit. */
  async insertWebhookDeliveries(rows: readonly NewWebhookDelivery[], now: number, tx: Executor = this.db.kysely): Promise<void> {
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      await tx
        .insertInto('webhook_deliveries')
        .values(
          rows.slice(i, i + INSERT_CHUNK).map((d) => ({
            id: d.id,
            job_id: d.jobId,
            url: d.url,
            payload: d.payloadJson,
            attempts: 0,
            next_attempt_at: now,
            status: 'PENDING',
            last_error: null,
            created_at: now,
          })),
        )
        .execute();
    }
  }
}
