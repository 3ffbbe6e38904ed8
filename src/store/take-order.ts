import { sql } from 'kysely';
import type SqliteDatabase from 'better-sqlite3';
import type { Db, Executor } from './database.js';
import { statusText } from './job-sql.js';

/**
 * The order of takes (`jobs.taken_seq`, migration 0019): a take stamps the jobs it claims with one
 * value, larger than that of every job held at the time — so a later take of a worker always
 * stamps a larger value than its earlier ones, and a job taken again gets a new one. A worker's
 * ping is read against it (`domain/held-report.ts`); clocks are not, since replicas' clocks
 * disagree and two takes may fall in one millisecond.
 *
 * Where takes are ordered by the database (PostgreSQL, shared by replicas) it is a sequence, one
 * value per head statement (`TAKE_ORDER_NEXT`). Where the database is in process (SQLite, whose
 * one writer is this process) it is a counter here, started above the largest value held.
 */

/** One new value of the database's order of takes, evaluated once per statement. */
export const TAKE_ORDER_NEXT = sql<string>`(SELECT nextval('jobs_taken_seq'))`;

/** The counter of an in-process database, per open database. */
const counters = new WeakMap<object, { last: number }>();

const SEED = `SELECT max(taken_seq) AS m FROM jobs WHERE status = ${statusText('IN_PROGRESS')}`;

function advance(db: Pick<Db, 'kysely'>, seed: () => unknown): number {
  let counter = counters.get(db.kysely);
  if (!counter) counters.set(db.kysely, (counter = { last: Number(seed() ?? 0) }));
  return ++counter.last;
}

/** The next take's order on SQLite's synchronous executor. */
export function nextTakeOrderSync(db: Pick<Db, 'kysely'>, raw: SqliteDatabase.Database): number {
  return advance(db, () => raw.prepare<[], { m: number | null }>(SEED).get()?.m);
}

/** The next take's order on an in-process database through Kysely (`tx` reads the seed once). */
export async function nextTakeOrder(db: Pick<Db, 'kysely'>, tx: Executor): Promise<number> {
  if (!counters.has(db.kysely)) {
    const { rows } = await sql.raw<{ m: number | null }>(SEED).execute(tx);
    if (!counters.has(db.kysely)) counters.set(db.kysely, { last: Number(rows[0]?.m ?? 0) });
  }
  return advance(db, () => 0);
}
