import type { Db, Executor } from './database.js';
import { toJobRecord, type JobRecord, type NewJob } from './job-record.js';
import type { JobsTable } from './endpoint-tables.js';
import { INSERT_CHUNK } from './job-sql.js';
import { prepareSync, runAsync } from './compiled-statement.js';
import { newJobColumns, newJobValues, usageValues } from './job-statement-values.js';
import { jobStatements } from './job-statements.js';

/** Job rows written by submissions, and read by id. */
export class JobRows {
  constructor(private readonly db: Db) {}

  /**
   * Inserts submitted jobs, IN_QUEUE, with the one insert of `job-statements.ts`: on PostgreSQL
   * its column-array form, one statement per chunk (the server parses the same text every time);
   * on SQLite its row form, prepared once and rebound per job, then the batch's quota deltas (one
   * upsert per account), in one transaction (`tx`, or its own).
   */
  async insertMany(jobs: readonly NewJob[], tx?: Executor): Promise<void> {
    const st = jobStatements(this.db);
    const { usage } = st;
    if (usage) {
      if (jobs.length === 0) return;
      const write = async (t: Executor) => {
        for (const j of jobs) await runAsync(t, st.insert, newJobValues(j));
        for (const u of usageValues(jobs)) await runAsync(t, usage, u);
      };
      return tx ? write(tx) : this.db.withTransaction(write);
    }
    for (let i = 0; i < jobs.length; i += INSERT_CHUNK) {
      const chunk = jobs.slice(i, i + INSERT_CHUNK);
      await runAsync(tx ?? this.db.kysely, st.insertColumns!, newJobColumns(chunk));
    }
  }

  /**
   * Inserts submitted jobs, IN_QUEUE, and commits them: the group commit's write. On SQLite the
   * synchronous executor runs the row insert per job in one synchronous transaction; elsewhere
   * `insertMany` (in a transaction when there are several chunks).
   */
  async insertCommitted(jobs: readonly NewJob[]): Promise<void> {
    const sync = this.db.syncTransaction;
    // one statement is its own transaction: no BEGIN and COMMIT round trips for a batch that fits
    if (!sync)
      return jobs.length <= INSERT_CHUNK
        ? this.insertMany(jobs)
        : this.db.withTransaction((tx) => this.insertMany(jobs, tx));
    return sync((raw) => {
      const st = jobStatements(this.db);
      const insert = prepareSync(raw, st.insert);
      for (const j of jobs) insert.run(newJobValues(j));
      const usage = prepareSync(raw, st.usage!);
      for (const u of usageValues(jobs)) usage.run(u);
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
