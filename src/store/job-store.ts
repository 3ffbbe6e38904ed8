import type { Db } from './database.js';
import { CommittedClaims } from './committed-claims.js';
import { JobClaims } from './job-claims.js';
import { JobControls } from './job-controls.js';
import { HeldJobs } from './held-jobs.js';
import { DEFAULT_RETENTION, type JobRetention } from './job-retention.js';
import { JobRows } from './job-rows.js';
import { JobStreamBuffer } from './job-stream-buffer.js';
import { JobSweeps } from './job-sweeps.js';
import { JobWebhookOutbox } from './job-webhook-outbox.js';
import { QueueStatsReader } from './queue-stats.js';

/**
 * The jobs aggregate: jobs, their stream buffer and the webhook outbox, one part per concern
 * (rows, claims, the jobs workers hold, controls, sweeps, stream buffer, webhook outbox, queue
 * stats, the worker side's group commits). Callers use the parts directly. Every part passes `now`
 * in and takes an optional `tx` to compose several statements in one transaction; status guards
 * come from `changesFrom()` of the pure state machine (see `job-statements.ts`). JSON columns
 * travel as text (`…Json`): the hot path never parses what it only passes on.
 */
export interface JobStore {
  readonly retention: JobRetention;
  readonly rows: JobRows;
  readonly claims: JobClaims;
  readonly held: HeldJobs;
  readonly controls: JobControls;
  readonly sweeps: JobSweeps;
  readonly stream: JobStreamBuffer;
  readonly outbox: JobWebhookOutbox;
  readonly stats: QueueStatsReader;
  readonly committed: CommittedClaims;
}

/** The parts of the job store over `db`, sharing one retention rule. */
export function openJobStore(db: Db, options: { retention?: JobRetention } = {}): JobStore {
  const retention = options.retention ?? DEFAULT_RETENTION;
  const claims = new JobClaims(db, retention);
  const held = new HeldJobs(db, retention);
  const outbox = new JobWebhookOutbox(db);
  return {
    retention,
    rows: new JobRows(db),
    claims,
    held,
    controls: new JobControls(db, retention),
    sweeps: new JobSweeps(db, retention),
    stream: new JobStreamBuffer(db),
    outbox,
    stats: new QueueStatsReader(db),
    committed: new CommittedClaims(db, claims, held, outbox),
  };
}
