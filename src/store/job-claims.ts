import { sql } from 'kysely';
import type SqliteDatabase from 'better-sqlite3';
import type { Db, Executor } from './database.js';
import { toJobRecord, type JobRecord, type WorkerResult } from './job-record.js';
import { DEFAULT_RETENTION, retainUntil, type JobRetention } from './job-retention.js';
import { nextTakeOrder, nextTakeOrderSync } from './take-order.js';
import { prepareSync, runAsync, slotIndex } from './compiled-statement.js';
import { finishedAt, heldBy, statusGuard, takenBy } from './job-sql.js';
import {
  claimValues,
  FINISH_SLOTS,
  finishValues,
  progressValues,
  type FinishValues,
  type HeadValues,
} from './job-statement-values.js';
import { jobStatements } from './job-statements.js';

/** Where the set-based result update reads each value of a finish statement's values. */
const FINISH = slotIndex(FINISH_SLOTS);
import type { JobsTable } from './endpoint-tables.js';

/** Jobs claimed per take statement: 3 parameters each, well under SQLite's limit. */
const TAKE_CHUNK = 2000;

/** Results applied per statement: 9 parameters each. */
const COMPLETE_CHUNK = 1000;

const bySeq = (a: JobRecord, b: JobRecord): number => a.seq - b.seq;

export interface TakeRequest {
  endpointId: string;
  workerId: string;
  n: number;
  /**
   * The worker says it holds no job (`job_in_progress=0`): in a committed batch, what it holds
   * is given back before anything is claimed (`CommittedClaims.takeCommitted`).
   */
  holdsNone?: boolean;
}

/** Per endpoint, the requests that ask it for jobs, in order, and how many jobs they ask in all. */
function byEndpoint(requests: readonly TakeRequest[]): Map<string, { indexes: number[]; total: number }> {
  const groups = new Map<string, { indexes: number[]; total: number }>();
  requests.forEach((r, i) => {
    if (r.n <= 0) return;
    const g = groups.get(r.endpointId);
    if (g) {
      g.indexes.push(i);
      g.total += r.n;
    } else groups.set(r.endpointId, { indexes: [i], total: r.n });
  });
  return groups;
}

/** The head of a queue dealt out to its requests in order: [job id, request index], FIFO. */
function deal(
  ids: readonly string[],
  indexes: readonly number[],
  requests: readonly TakeRequest[],
): Array<[string, number]> {
  const claims: Array<[string, number]> = [];
  let next = 0;
  for (const i of indexes) for (let k = 0; k < requests[i]!.n && next < ids.length; k++) claims.push([ids[next++]!, i]);
  return claims;
}

/** The posts that are the first result of their job, and the rest (progress, repeats), in order. */
function splitPosts(posts: readonly WorkerResult[]): { firsts: number[]; rest: number[] } {
  const seen = new Set<string>();
  const firsts: number[] = [];
  const rest: number[] = [];
  posts.forEach((p, i) => {
    if (p.status !== 'IN_PROGRESS' && !seen.has(p.id)) {
      seen.add(p.id);
      firsts.push(i);
    } else rest.push(i);
  });
  return { firsts, rest };
}

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
   *
   * In-process engines (SQLite) claim each job with the row-at-a-time statement `takeRows` also
   * runs; others claim a chunk of the head in one set-based statement built from the same pieces.
   */
  async takeMany(requests: readonly TakeRequest[], now: number, tx: Executor): Promise<JobRecord[][]> {
    const st = jobStatements(this.db);
    const results: JobRecord[][] = requests.map(() => []);
    for (const [endpointId, { indexes, total }] of byEndpoint(requests)) {
      const head = await runAsync<HeadValues, { id: string; taken_seq?: string }>(tx, st.head, [
        endpointId,
        now,
        total,
      ]);
      const claims = deal(
        head.map((r) => r.id),
        indexes,
        requests,
      );
      if (claims.length === 0) continue;
      if (this.db.capabilities.inProcess) {
        const order = await nextTakeOrder(this.db, tx);
        for (const [id, i] of claims) {
          const [row] = await runAsync(tx, st.claim, claimValues(id, requests[i]!.workerId, now, order));
          if (row) results[i]!.push(toJobRecord(row));
        }
        continue;
      }
      const order = Number(head[0]!.taken_seq);
      const owner = new Map(claims);
      for (let c = 0; c < claims.length; c += TAKE_CHUNK) {
        const chunk = claims.slice(c, c + TAKE_CHUNK);
        const workerCase = sql<string>`CASE id ${sql.join(
          chunk.map(([id, i]) => sql`WHEN ${id} THEN ${requests[i]!.workerId}`),
          sql` `,
        )} END`;
        const rows = await tx
          .updateTable('jobs')
          .set(takenBy(workerCase, now, order))
          .where(
            'id',
            'in',
            chunk.map(([id]) => id),
          )
          .where(statusGuard('take'))
          .returningAll()
          .execute();
        for (const row of rows) results[owner.get(row.id)!]!.push(toJobRecord(row));
      }
    }
    for (const r of results) r.sort(bySeq);
    return results;
  }

  /**
   * `takeMany` on SQLite's synchronous executor: the same statements, prepared once and rebound
   * per job, inside `Db.syncTransaction`. Answers each request's rows.
   */
  takeRows(raw: SqliteDatabase.Database, requests: readonly TakeRequest[], now: number): JobsTable[][] {
    const st = jobStatements(this.db);
    const head = prepareSync<HeadValues, { id: string }>(raw, st.head);
    const claim = prepareSync(raw, st.claim);
    const results: JobsTable[][] = requests.map(() => []);
    for (const [endpointId, { indexes, total }] of byEndpoint(requests)) {
      const ids = head.all([endpointId, now, total]).map((r) => r.id);
      const claims = deal(ids, indexes, requests);
      if (claims.length === 0) continue;
      const order = nextTakeOrderSync(this.db, raw);
      for (const [id, i] of claims) {
        const row = claim.get(claimValues(id, requests[i]!.workerId, now, order));
        if (row) results[i]!.push(row);
      }
    }
    return results;
  }

  /**
   * Applies workers' posts, each guarded by "IN_PROGRESS on this worker": results finish the job
   * (execution time, retention deadline), progress replaces the visible output. Answers, per post
   * and in order, the job as changed — or null when its guard failed (late, repeated, foreign
   * post, or no such job) and nothing changed.
   *
   * The first result of each job is applied first (on PostgreSQL by one set-based statement per
   * chunk); progress posts and further posts for the same job follow one by one, in order — so a
   * progress post in the same batch as its job's result is dropped like any late progress.
   */
  async completeMany(
    results: readonly WorkerResult[],
    now: number,
    tx: Executor = this.db.kysely,
  ): Promise<Array<JobRecord | null>> {
    const st = jobStatements(this.db);
    const changed: Array<JobRecord | null> = results.map(() => null);
    const { firsts, rest } = splitPosts(results);
    const one = async (r: WorkerResult): Promise<JobRecord | null> => {
      const [row] =
        r.status === 'IN_PROGRESS'
          ? await runAsync(tx, st.progress, progressValues(r))
          : await runAsync(tx, st.finish, finishValues(r, now, this.retention));
      return row ? toJobRecord(row) : null;
    };
    if (this.db.capabilities.inProcess) for (const i of firsts) changed[i] = await one(results[i]!);
    else
      for (let c = 0; c < firsts.length; c += COMPLETE_CHUNK) {
        const indexes = firsts.slice(c, c + COMPLETE_CHUNK);
        const chunk = indexes.map((i) => finishValues(results[i]!, now, this.retention));
        const byId = <T>(value: (r: FinishValues) => T) =>
          sql<T>`CASE id ${sql.join(
            chunk.map((r) => sql`WHEN ${r[FINISH.id]} THEN ${value(r)}`),
            sql` `,
          )} END`;
        const rows = await tx
          .updateTable('jobs')
          .set({
            status: byId((r) => r[FINISH.status] as FinishValues[0]),
            output: byId((r) => r[FINISH.output] as FinishValues[1]),
            error: byId((r) => r[FINISH.error] as FinishValues[2]),
            ...finishedAt(now, retainUntil(this.retention, now)),
          })
          .where(
            'id',
            'in',
            chunk.map((r) => r[FINISH.id] as string),
          )
          .where(statusGuard('complete'))
          .where(
            heldBy(
              byId((r) => r[FINISH.workerId] as string),
              byId((r) => r[FINISH.endpointId] as string | null),
            ),
          )
          .returningAll()
          .execute();
        const at = new Map(indexes.map((i) => [results[i]!.id, i]));
        for (const row of rows) changed[at.get(row.id)!] = toJobRecord(row);
      }
    for (const i of rest) changed[i] = await one(results[i]!);
    return changed;
  }

  /** `completeMany` on SQLite's synchronous executor (see `takeRows`). */
  completeRows(raw: SqliteDatabase.Database, posts: readonly WorkerResult[], now: number): Array<JobsTable | null> {
    const st = jobStatements(this.db);
    const finish = prepareSync(raw, st.finish);
    const progress = prepareSync(raw, st.progress);
    const one = (p: WorkerResult): JobsTable | null =>
      (p.status === 'IN_PROGRESS'
        ? progress.get(progressValues(p))
        : finish.get(finishValues(p, now, this.retention))) ?? null;
    const changed: Array<JobsTable | null> = posts.map(() => null);
    const { firsts, rest } = splitPosts(posts);
    for (const i of firsts) changed[i] = one(posts[i]!);
    for (const i of rest) changed[i] = one(posts[i]!);
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
