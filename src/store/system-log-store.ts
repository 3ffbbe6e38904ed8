import type { Db } from './database.js';

/** One stored system line. */
export interface SystemLogRow {
  seq: number;
  instanceId: string;
  /** ms epoch */
  ts: number;
  line: string;
}

/** Which of an instance's lines {@link SystemLogStore.read} answers. */
export interface SystemLogRead {
  /** only lines at or after this ms epoch */
  sinceMs?: number;
  /** only lines stored after this seq (a follower's cursor) */
  afterSeq?: number;
  /** of those, the last `tail` @default all */
  tail?: number;
}

/** Lines kept per instance; older ones go as new ones come. @default 1000 */
const SYSTEM_LOG_KEEP = 1_000;

/**
 * The platform's own lines about pods and workers (migration 0011). Both dialects: `seq` grows
 * with every line of every instance, so one cursor finds what any replica wrote since.
 */
export class SystemLogStore {
  readonly #db: Db;
  readonly #keep: number;

  constructor(db: Db, keep = SYSTEM_LOG_KEEP) {
    this.#db = db;
    this.#keep = keep;
  }

  /** Stores a line, then drops the instance's lines beyond the last `keep`. Answers its seq. */
  async append(instanceId: string, ts: number, line: string): Promise<number> {
    const k = this.#db.kysely;
    const row = await k
      .insertInto('system_log')
      .values({ instance_id: instanceId, ts, line })
      .returning('seq')
      .executeTakeFirstOrThrow();
    const seq = Number(row.seq);
    // Lifecycle lines are rare: trimming at each one costs one indexed lookup.
    const edge = await k
      .selectFrom('system_log')
      .select('seq')
      .where('instance_id', '=', instanceId)
      .orderBy('seq', 'desc')
      .offset(this.#keep)
      .limit(1)
      .executeTakeFirst();
    if (edge)
      await k
        .deleteFrom('system_log')
        .where('instance_id', '=', instanceId)
        .where('seq', '<=', Number(edge.seq))
        .execute();
    return seq;
  }

  /** The instance's lines `query` selects, oldest first. */
  async read(instanceId: string, query: SystemLogRead = {}): Promise<SystemLogRow[]> {
    let q = this.#db.kysely
      .selectFrom('system_log')
      .select(['seq', 'instance_id', 'ts', 'line'])
      .where('instance_id', '=', instanceId);
    if (query.sinceMs !== undefined) q = q.where('ts', '>=', query.sinceMs);
    if (query.afterSeq !== undefined) q = q.where('seq', '>', query.afterSeq);
    const rows =
      query.tail !== undefined
        ? (await q.orderBy('seq', 'desc').limit(query.tail).execute()).reverse()
        : await q.orderBy('seq').limit(this.#keep).execute();
    return rows.map((r) => ({ seq: Number(r.seq), instanceId: r.instance_id, ts: Number(r.ts), line: r.line }));
  }

  /** Which instances got lines after `seq`, and the last seq seen (the shared poll of followers on every replica). */
  async since(seq: number, limit = 1_000): Promise<{ instanceIds: Set<string>; last: number }> {
    const rows = await this.#db.kysely
      .selectFrom('system_log')
      .select(['seq', 'instance_id'])
      .where('seq', '>', seq)
      .orderBy('seq')
      .limit(limit)
      .execute();
    return {
      instanceIds: new Set(rows.map((r) => r.instance_id)),
      last: rows.length > 0 ? Number(rows[rows.length - 1]!.seq) : seq,
    };
  }

  /** The highest seq stored (0 for none). */
  async lastSeq(): Promise<number> {
    const row = await this.#db.kysely
      .selectFrom('system_log')
      .select((eb) => eb.fn.max('seq').as('max'))
      .executeTakeFirst();
    return Number(row?.max ?? 0);
  }

  /** Deletes an instance's lines. */
  async remove(instanceId: string): Promise<void> {
    await this.#db.kysely.deleteFrom('system_log').where('instance_id', '=', instanceId).execute();
  }

  /**
   * Deletes the lines of what is gone: pods terminated before `cutoff`, and instances (workers)
   * with no pod or worker row whose lines are all older than `cutoff`. Answers how many went.
   */
  async pruneGone(cutoff: number): Promise<number> {
    const k = this.#db.kysely;
    const terminated = await k
      .deleteFrom('system_log')
      .where('instance_id', 'in', (eb) =>
        eb.selectFrom('pods').select('id').where('status', '=', 'TERMINATED').where('terminated_at', '<', cutoff),
      )
      .executeTakeFirst();
    const orphaned = await k
      .deleteFrom('system_log')
      .where('ts', '<', cutoff)
      .where('instance_id', 'not in', (eb) => eb.selectFrom('pods').select('id'))
      .where('instance_id', 'not in', (eb) => eb.selectFrom('workers').select('id'))
      .executeTakeFirst();
    return Number(terminated.numDeletedRows) + Number(orphaned.numDeletedRows);
  }
}
