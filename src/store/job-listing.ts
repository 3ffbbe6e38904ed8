import type { JobStatus } from '../domain/job-state.js';
import type { Db, Executor } from './database.js';

/** What `GET /v2/{endpointId}/requests` shows of a job: never its input, output, error or s3Config. */
export interface JobSummary {
  id: string;
  status: JobStatus;
  createdAt: number;
  delayMs: number | null;
  executionMs: number | null;
  retries: number;
}

/** Where a page ended: the last job's creation time and id (jobs are listed newest first). */
export interface JobListingPosition {
  createdAt: number;
  id: string;
}

export interface RecentJobsQuery {
  /** Jobs past their ttl or result retention at `now` are gone, as everywhere else, even before the timekeeper deletes them. */
  now: number;
  status?: JobStatus;
  /** Jobs per page. */
  limit: number;
  /** Answer only jobs listed after this one. */
  after?: JobListingPosition;
}

export interface RecentJobsPage {
  jobs: JobSummary[];
  /** The position to continue from, or null when this page is the last. */
  next: JobListingPosition | null;
}

/**
 * The jobs of one endpoint, newest first (creation time, then id), read a page at a time by
 * keyset. No index serves this order on purpose: every index slows `/run` ingest, and this route
 * is limited to 10 calls per 10 s. With `status` the `jobs_take (endpoint_id, status, seq)` index
 * narrows the rows; without it, the endpoint prefix of the same index does.
 */
export class JobListing {
  constructor(private readonly db: Db) {}

  async recent(
    accountId: string,
    endpointId: string,
    query: RecentJobsQuery,
    tx: Executor = this.db.kysely,
  ): Promise<RecentJobsPage> {
    let q = tx
      .selectFrom('jobs')
      .select(['id', 'status', 'created_at', 'delay_ms', 'execution_ms', 'retries'])
      .where('endpoint_id', '=', endpointId)
      .where('account_id', '=', accountId)
      .where('expires_at', '>', query.now)
      .where((eb) => eb.or([eb('retain_until', 'is', null), eb('retain_until', '>', query.now)]));
    if (query.status !== undefined) q = q.where('status', '=', query.status);
    const after = query.after;
    if (after !== undefined)
      q = q.where((eb) =>
        eb.or([
          eb('created_at', '<', after.createdAt),
          eb.and([eb('created_at', '=', after.createdAt), eb('id', '<', after.id)]),
        ]),
      );
    const rows = await q
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(query.limit + 1)
      .execute();
    const jobs = rows.slice(0, query.limit).map((r): JobSummary => ({
      id: r.id,
      status: r.status,
      createdAt: Number(r.created_at),
      delayMs: r.delay_ms === null ? null : Number(r.delay_ms),
      executionMs: r.execution_ms === null ? null : Number(r.execution_ms),
      retries: Number(r.retries),
    }));
    const last = jobs.at(-1);
    return { jobs, next: rows.length > query.limit && last ? { createdAt: last.createdAt, id: last.id } : null };
  }
}
