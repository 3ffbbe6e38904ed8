import { sql } from 'kysely';
import type { Db, Executor } from './database.js';
import { changesFrom, WORKER_LOST_ERROR } from '../domain/job-state.js';
import { toJobRecord, type JobRecord, type WorkerResult } from './job-record.js';
import { DEFAULT_RETENTION, retainUntil, type JobRetention } from './job-retention.js';
import { big, soleStatus } from './job-sql.js';

/** Jobs claimed per take statement: 3 parameters each, well under SQLite's limit. */
const TAKE_CHUNK = 2000;

/** Results applied per statement: 9 parameters each. */
const COMPLETE_CHUNK = 1000;

const bySeq = (a: JobRecord, b: JobRecord): number => a.seq - b.seq;

/**
 * Workers' claims on jobs: taking them, posting their results, giving them back (released, or
 * requeued when the worker is lost), and the job-stop channel that tells a worker to let go.
 */
export class JobClaims {
  constructor(
    private readonly db: Db,
    readonly retention: JobRetention = DEFAULT_RETENTION,
  ) {}

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
  async takeMany(
    requests: ReadonlyArray<{ endpointId: string; workerId: string; n: number }>,
    now: number,
    tx: Executor,
  ): Promise<JobRecord[][]> {
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
      const ids = (await (this.db.capabilities.skipLocked ? head.forUpdate().skipLocked() : head).execute()).map(
        (r) => r.id,
      );
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
          .where(
            'id',
            'in',
            chunk.map(([id]) => id),
          )
          .where('status', 'in', changesFrom('take'))
          .returningAll()
          .execute();
        for (const row of rows) results[owner.get(row.id)!]!.push(toJobRecord(row));
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
  async completeMany(
    results: readonly WorkerResult[],
    now: number,
    tx: Executor = this.db.kysely,
  ): Promise<Array<JobRecord | null>> {
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
      const byId = <T>(value: (r: WorkerResult) => T) =>
        sql<T>`CASE id ${sql.join(
          chunk.map((r) => sql`WHEN ${r.id} THEN ${value(r)}`),
          sql` `,
        )} END`;
      const rows = await tx
        .updateTable('jobs')
        .set({
          status: byId((r) => r.status),
          output: byId((r) => (r.status === 'COMPLETED' ? r.outputJson : null)),
          error: byId((r) => (r.status === 'FAILED' ? r.error : null)),
          completed_at: now,
          execution_ms: sql<number>`${big(now)} - started_at`,
          retain_until: retainUntil(this.retention, now),
          timeout_at: null,
        })
        .where(
          'id',
          'in',
          chunk.map((r) => r.id),
        )
        .where('status', 'in', changesFrom('complete'))
        .where(
          'worker_id',
          '=',
          byId((r) => r.workerId),
        )
        .where(sql<boolean>`endpoint_id = ${byId((r) => r.endpointId ?? sql`endpoint_id`)}`)
        .returningAll()
        .execute();
      for (const row of rows) changed[finals.get(row.id)!] = toJobRecord(row);
    }
    for (const i of rest) {
      const r = results[i]!;
      let base = tx
        .updateTable('jobs')
        .where('id', '=', r.id)
        .where('status', 'in', changesFrom('complete'))
        .where('worker_id', '=', r.workerId);
      if (r.endpointId !== undefined) base = base.where('endpoint_id', '=', r.endpointId);
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
                retain_until: retainUntil(this.retention, now),
                timeout_at: null,
              })
              .returningAll()
              .executeTakeFirst();
      changed[i] = row ? toJobRecord(row) : null;
    }
    return changed;
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

  /**
   * A worker was lost: its running jobs go back to the queue keeping their place (`seq`) with
   * `retries + 1`, or become FAILED once `retries` reached `retryBudget`. `endpointId` scopes a
   * worker that named itself (its id may be another endpoint's worker's too); null only for ids
   * this server issued.
   */
  async requeueFromWorker(
    workerId: string,
    endpointId: string | null,
    now: number,
    retryBudget: number,
    tx: Executor = this.db.kysely,
  ): Promise<{ requeued: JobRecord[]; failed: JobRecord[] }> {
    let held = tx.updateTable('jobs').where('worker_id', '=', workerId).where('status', '=', soleStatus('worker-lost'));
    if (endpointId !== null) held = held.where('endpoint_id', '=', endpointId);
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
        retain_until: retainUntil(this.retention, now),
        timeout_at: null,
      })
      .where('retries', '>=', retryBudget)
      .returningAll()
      .execute();
    return { requeued: requeued.map(toJobRecord), failed: failed.map(toJobRecord) };
  }

  /**
   * Ids of the endpoint's jobs the worker must stop and has not been told about yet; marks them
   * told. Scoped to the endpoint: a worker id is the worker's own choice, and two endpoints'
   * workers may pick the same one.
   */
  async takeStopRequests(workerId: string, endpointId: string, tx: Executor = this.db.kysely): Promise<string[]> {
    const rows = await tx
      .updateTable('jobs')
      .set({ stop_requested: 2 })
      .where('worker_id', '=', workerId)
      .where('endpoint_id', '=', endpointId)
      .where('stop_requested', '=', 1)
      .returning('id')
      .execute();
    return rows.map((r) => r.id).sort();
  }
}
