import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import type SqliteDatabase from 'better-sqlite3';
import type { Db, Executor } from './database.js';
import { WORKER_LOST_ERROR, type JobStatus } from '../domain/job-state.js';
import type { HeldJob } from '../domain/held-report.js';
import { toJobRecord, type JobRecord } from './job-record.js';
import { retainUntil, retainUntilOf, type JobRetention } from './job-retention.js';
import { big, heldBy, statusGuard, statusLit, statusText } from './job-sql.js';
import { compileStatement, prepareSync, runAsync, slot, type CompiledStatement } from './compiled-statement.js';
import type { JobsTable } from './endpoint-tables.js';
import type { Database } from './schema.js';

/** A worker: its endpoint and its id (an id names a worker only within its endpoint). */
export interface WorkerRef {
  endpointId: string;
  workerId: string;
}

/** Jobs given back by a worker: those back in the queue, and those FAILED past the retry budget. */
export interface GivenBack {
  requeued: JobRecord[];
  failed: JobRecord[];
}

export const NOTHING_GIVEN_BACK: GivenBack = Object.freeze({ requeued: [], failed: [] });

/**
 * What giving a held job back writes (the state machine's `worker-lost`): IN_QUEUE at its old place
 * (`seq` kept) with `retries + 1` while `retries` is under the budget, else FAILED saying the
 * worker was lost. One statement for both, so a worker's jobs are given back in one round trip;
 * every branch reads the row as it was (SQL evaluates all of SET against the old row).
 */
function givenBack(now: Expression<number>, retain: Expression<number>, retryBudget: number, counted = true) {
  // Not counted (a job the platform took back, e.g. from a worker it suspended): always requeued, `retries` kept.
  const kept = counted ? sql<SqlBool>`retries < ${sql.lit(Math.max(0, Math.floor(retryBudget)))}` : sql<SqlBool>`1 = 1`;
  const either = <T>(requeued: Expression<T>, failed: Expression<T>) =>
    sql<T>`CASE WHEN ${kept} THEN ${requeued} ELSE ${failed} END`;
  const old = <T>(column: keyof JobsTable) => sql.ref<T>(column);
  const none = sql.lit(null);
  return {
    status: either<JobStatus>(statusLit('IN_QUEUE'), statusLit('FAILED')),
    retries: either<number>(counted ? sql`retries + 1` : old('retries'), old('retries')),
    queued_at: either<number>(now, old('queued_at')),
    worker_id: either<string | null>(none, old('worker_id')),
    started_at: either<number | null>(none, old('started_at')),
    delay_ms: either<number | null>(none, old('delay_ms')),
    output: either<string | null>(none, old('output')),
    error: either<string | null>(old('error'), sql.lit(WORKER_LOST_ERROR)),
    completed_at: either<number | null>(old('completed_at'), now),
    execution_ms: either<number | null>(old('execution_ms'), sql`${now} - started_at`),
    retain_until: either<number | null>(old('retain_until'), retain),
    timeout_at: none,
  };
}

/** The slots of the statements giving back every job some workers hold: what they write, then whose. */
const GIVE_BACK_SLOTS = ['now', 'now', 'now', 'runsyncUntil', 'runUntil'] as const;
type GiveBackSet = [number, number, number, number, number];
/** Per worker (in process): its id and endpoint. */
type GiveBackValues = [...GiveBackSet, string, string];
/** For many workers at once (PostgreSQL): their ids and endpoints, as arrays. */
type GiveBackManyValues = [...GiveBackSet, string[], string[]];

interface GiveBackStatements {
  /** The jobs of one worker (by id and endpoint). */
  one: CompiledStatement<GiveBackValues>;
  /** The jobs of many workers; null where arrays cannot be bound (SQLite). */
  many: CompiledStatement<GiveBackManyValues> | null;
}
const giveBackStatements = new WeakMap<object, Map<number, GiveBackStatements>>();

/** The statements giving back every job some workers hold, per database and retry budget. */
export function giveBackStatement(db: Pick<Db, 'kysely' | 'capabilities'>, retryBudget: number): GiveBackStatements {
  let byBudget = giveBackStatements.get(db.kysely);
  if (!byBudget) giveBackStatements.set(db.kysely, (byBudget = new Map<number, GiveBackStatements>()));
  let s = byBudget.get(retryBudget);
  if (!s) {
    const now = big(slot<number>('now'));
    const retain = retainUntilOf(big(slot('runsyncUntil')), big(slot('runUntil')));
    const update = () =>
      db.kysely
        .updateTable('jobs')
        .set(givenBack(now, retain, retryBudget))
        .where(statusGuard('worker-lost'));
    s = {
      one: compileStatement<GiveBackValues>(
        update()
          .where(heldBy(slot('workerId'), slot('endpointId')))
          .returningAll(),
        [...GIVE_BACK_SLOTS, 'workerId', 'endpointId'],
      ),
      many: db.capabilities.inProcess
        ? null
        : compileStatement<GiveBackManyValues>(
            // One index probe per worker (a lateral join), not one scan for all: a probe skips the
            // index entries of rows it found dead before, which a bitmap scan keeps revisiting.
            update()
              .where(
                sql<SqlBool>`id IN (SELECT held.id FROM unnest(${slot('workerIds')}::text[], ${slot('endpointIds')}::text[]) AS w(worker_id, endpoint_id)
                  CROSS JOIN LATERAL (SELECT id FROM jobs WHERE jobs.worker_id = w.worker_id AND jobs.status = ${statusLit('IN_PROGRESS')} AND jobs.endpoint_id = w.endpoint_id OFFSET 0) AS held)`,
              )
              .returningAll(),
            [...GIVE_BACK_SLOTS, 'workerIds', 'endpointIds'],
          ),
    };
    byBudget.set(retryBudget, s);
  }
  return s;
}

const HOLDS_ANY = `SELECT 1 AS one FROM jobs WHERE worker_id = ? AND status = ${statusText('IN_PROGRESS')} AND endpoint_id = ? LIMIT 1`;

const split = (rows: readonly JobsTable[]): GivenBack => {
  const records = rows.map(toJobRecord);
  return {
    requeued: records.filter((j) => j.status === 'IN_QUEUE'),
    failed: records.filter((j) => j.status === 'FAILED'),
  };
};

const distinct = (workers: readonly WorkerRef[]): WorkerRef[] => {
  const seen = new Map<string, WorkerRef>();
  for (const w of workers) seen.set(`${w.endpointId}\u0000${w.workerId}`, w);
  return [...seen.values()];
};

/**
 * The jobs workers hold (IN_PROGRESS on them), and giving them back: when the worker is lost
 * (silent past the heartbeat timeout, or unhealthy), and when its own take or ping shows it no
 * longer holds them (`domain/held-report.ts`). Either way the same statement: back to the queue
 * at their old place with `retries + 1`, or FAILED once the retry budget is spent. Its guard is
 * "IN_PROGRESS on this worker", the guard of a result too, so a result and a give-back racing for
 * one job are applied one or the other, never both.
 */
export class HeldJobs {
  constructor(
    private readonly db: Db,
    readonly retention: JobRetention,
  ) {}

  /** The jobs IN_PROGRESS on `workerId` through `endpointId`, each with its take's order and time. */
  async list(workerId: string, endpointId: string, tx: Executor = this.db.kysely): Promise<HeldJob[]> {
    const rows = await tx
      .selectFrom('jobs')
      .select(['id', 'taken_seq', 'started_at'])
      .where('worker_id', '=', workerId)
      .where(statusGuard('worker-lost'))
      .where('endpoint_id', '=', endpointId)
      .execute();
    return rows.map((r) => ({
      id: r.id,
      takenSeq: r.taken_seq === null ? null : Number(r.taken_seq),
      startedAt: Number(r.started_at),
    }));
  }

  /**
   * Gives back the jobs IN_PROGRESS on `workerId` through `endpointId` (null: any endpoint, only
   * for worker ids this server issued) — all of them, or with `only` just those still held as
   * listed (same take: a job taken again meanwhile is not one of them). `counted` false: the
   * jobs go back without a retry counted (the platform took them back, not a worker failure).
   */
  async giveBack(
    workerId: string,
    endpointId: string | null,
    now: number,
    retryBudget: number,
    tx: Executor = this.db.kysely,
    only?: readonly HeldJob[],
    counted = true,
  ): Promise<GivenBack> {
    if (only?.length === 0) return NOTHING_GIVEN_BACK;
    let q = tx
      .updateTable('jobs')
      .set(givenBack(big(now), retainUntil(this.retention, now), retryBudget, counted))
      .where('worker_id', '=', workerId)
      .where(statusGuard('worker-lost'));
    if (endpointId !== null) q = q.where('endpoint_id', '=', endpointId);
    if (only) q = q.where((eb) => eb.or(only.map((j) => sameTake(eb, j))));
    return split(await q.returningAll().execute());
  }

  /**
   * In a take's transaction, before it claims anything: gives back every job each of `workers`
   * holds — all from earlier takes, since this one has claimed nothing yet. Set-based on
   * PostgreSQL (one statement); one statement per worker in process.
   */
  async giveBackAll(workers: readonly WorkerRef[], now: number, retryBudget: number, tx: Executor): Promise<GivenBack> {
    const unique = distinct(workers);
    if (unique.length === 0) return NOTHING_GIVEN_BACK;
    const { one, many } = giveBackStatement(this.db, retryBudget);
    if (!many) {
      const rows: JobsTable[] = [];
      for (const w of unique) rows.push(...(await runAsync(tx, one, [...this.#set(now), w.workerId, w.endpointId])));
      return split(rows);
    }
    const workerIds = unique.map((w) => w.workerId);
    const endpointIds = unique.map((w) => w.endpointId);
    return split(await runAsync(tx, many, [...this.#set(now), workerIds, endpointIds]));
  }

  /** `giveBackAll` on SQLite's synchronous executor, inside `Db.syncTransaction`. */
  giveBackRows(
    raw: SqliteDatabase.Database,
    workers: readonly WorkerRef[],
    now: number,
    retryBudget: number,
  ): GivenBack {
    const unique = distinct(workers);
    if (unique.length === 0) return NOTHING_GIVEN_BACK;
    // Most such takes find nothing held: a cheap probe spares them the update.
    const holds = raw.prepare<[string, string], { one: number }>(HOLDS_ANY);
    const holding = unique.filter((w) => holds.get(w.workerId, w.endpointId) !== undefined);
    if (holding.length === 0) return NOTHING_GIVEN_BACK;
    const st = prepareSync(raw, giveBackStatement(this.db, retryBudget).one);
    return split(holding.flatMap((w) => st.all([...this.#set(now), w.workerId, w.endpointId])));
  }

  #set(now: number): GiveBackSet {
    return [now, now, now, now + this.retention.runsyncMs, now + this.retention.runMs];
  }
}

/** The job `j` as listed: same id, still from the same take. */
function sameTake(eb: ExpressionBuilder<Database, 'jobs'>, j: HeldJob): Expression<SqlBool> {
  return eb.and([
    eb('id', '=', j.id),
    eb('started_at', '=', j.startedAt),
    j.takenSeq === null ? eb('taken_seq', 'is', null) : eb('taken_seq', '=', j.takenSeq),
  ]);
}
