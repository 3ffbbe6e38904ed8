import { DEFAULT_RETENTION, type JobRetention } from '../store/job-retention.js';

/** The jobs slice of the configuration. */
export interface JobsConfig {
  /** How often a job goes back to the queue when its worker is lost before it FAILS. @default 3 */
  retryBudget: number;
  /**
   * A worker silent this long is lost; a job taken this long ago is no longer on its way to its
   * worker, for a ping that lists no job (`domain/held-report.ts`). @default 30000
   */
  heartbeatTimeoutMs: number;
  /** @default { runMs: 1800000, runsyncMs: 60000 } */
  retention: JobRetention;
  /** Most submissions (or completions) committed in one transaction. @default 1000 */
  maxBatchSize: number;
  /** Group-commit transactions open at once; >1 only helps on PostgreSQL. @default 1 */
  commitConcurrency: number;
  /** Rows one timekeeper statement times out or deletes. @default 1000 */
  sweepLimit: number;
  /** How old the job quotas' stored counters may get before a request re-reads them (see JobQuota). @default 1000 */
  quotaRefreshMs: number;
}

export const DEFAULT_JOBS_CONFIG: JobsConfig = {
  retryBudget: 3,
  heartbeatTimeoutMs: 30_000,
  retention: DEFAULT_RETENTION,
  maxBatchSize: 1000,
  commitConcurrency: 1,
  sweepLimit: 1000,
  quotaRefreshMs: 1000,
};
