import type { Db } from './database.js';
import { CommittedClaims } from './committed-claims.js';
import { JobClaims } from './job-claims.js';
import { JobControls } from './job-controls.js';
import { DEFAULT_RETENTION, type JobRetention } from './job-retention.js';
import { JobRows } from './job-rows.js';
import { JobStreamBuffer } from './job-stream-buffer.js';
import { JobSweeps } from './job-sweeps.js';
import { JobWebhookOutbox } from './job-webhook-outbox.js';
import { QueueStatsReader } from './queue-stats.js';

/**
 * The jobs aggregate: jobs, their stream buffer and the webhook outbox. One SQL operation per
 * method, `now` passed in, an optional `tx` to compose several in one transaction. Status guards
 * come from `changesFrom()` of the pure state machine, so every set-based update here is one of
 * its transitions. JSON columns travel as text (`…Json`): the hot path never parses what it only
 * passes on.
 *
 * The statements live in one part per concern (rows, claims, controls, sweeps, stream buffer,
 * webhook outbox, queue stats); this class answers all of them under their own names.
 */
export class JobStore {
  readonly retention: JobRetention;
  readonly #rows: JobRows;
  readonly #claims: JobClaims;
  readonly #controls: JobControls;
  readonly #sweeps: JobSweeps;
  readonly #stream: JobStreamBuffer;
  readonly #outbox: JobWebhookOutbox;
  readonly #stats: QueueStatsReader;
  readonly #committed: CommittedClaims;

  constructor(db: Db, options: { retention?: JobRetention } = {}) {
    this.retention = options.retention ?? DEFAULT_RETENTION;
    this.#rows = new JobRows(db);
    this.#claims = new JobClaims(db, this.retention);
    this.#controls = new JobControls(db, this.retention);
    this.#sweeps = new JobSweeps(db, this.retention);
    this.#stream = new JobStreamBuffer(db);
    this.#outbox = new JobWebhookOutbox(db);
    this.#stats = new QueueStatsReader(db);
    this.#committed = new CommittedClaims(db, this.#claims, this.#outbox);
  }

  // ── rows: see JobRows ──────────────────────────────────────────────────────────────────────

  insertMany(...args: Parameters<JobRows['insertMany']>): ReturnType<JobRows['insertMany']> {
    return this.#rows.insertMany(...args);
  }
  insertCommitted(...args: Parameters<JobRows['insertCommitted']>): ReturnType<JobRows['insertCommitted']> {
    return this.#rows.insertCommitted(...args);
  }
  get(...args: Parameters<JobRows['get']>): ReturnType<JobRows['get']> {
    return this.#rows.get(...args);
  }
  getMany(...args: Parameters<JobRows['getMany']>): ReturnType<JobRows['getMany']> {
    return this.#rows.getMany(...args);
  }
  maxSeq(...args: Parameters<JobRows['maxSeq']>): ReturnType<JobRows['maxSeq']> {
    return this.#rows.maxSeq(...args);
  }

  // ── claims: see JobClaims ──────────────────────────────────────────────────────────────────

  takeNext(...args: Parameters<JobClaims['takeNext']>): ReturnType<JobClaims['takeNext']> {
    return this.#claims.takeNext(...args);
  }
  takeMany(...args: Parameters<JobClaims['takeMany']>): ReturnType<JobClaims['takeMany']> {
    return this.#claims.takeMany(...args);
  }
  completeMany(...args: Parameters<JobClaims['completeMany']>): ReturnType<JobClaims['completeMany']> {
    return this.#claims.completeMany(...args);
  }
  release(...args: Parameters<JobClaims['release']>): ReturnType<JobClaims['release']> {
    return this.#claims.release(...args);
  }
  requeueFromWorker(...args: Parameters<JobClaims['requeueFromWorker']>): ReturnType<JobClaims['requeueFromWorker']> {
    return this.#claims.requeueFromWorker(...args);
  }
  takeStopRequests(...args: Parameters<JobClaims['takeStopRequests']>): ReturnType<JobClaims['takeStopRequests']> {
    return this.#claims.takeStopRequests(...args);
  }

  // ── the worker side's group commits: see CommittedClaims ─────────────────────────────────

  takeCommitted(...args: Parameters<CommittedClaims['takeCommitted']>): ReturnType<CommittedClaims['takeCommitted']> {
    return this.#committed.takeCommitted(...args);
  }
  completeCommitted(
    ...args: Parameters<CommittedClaims['completeCommitted']>
  ): ReturnType<CommittedClaims['completeCommitted']> {
    return this.#committed.completeCommitted(...args);
  }

  // ── controls: see JobControls ──────────────────────────────────────────────────────────────

  cancel(...args: Parameters<JobControls['cancel']>): ReturnType<JobControls['cancel']> {
    return this.#controls.cancel(...args);
  }
  retry(...args: Parameters<JobControls['retry']>): ReturnType<JobControls['retry']> {
    return this.#controls.retry(...args);
  }
  purgeQueue(...args: Parameters<JobControls['purgeQueue']>): ReturnType<JobControls['purgeQueue']> {
    return this.#controls.purgeQueue(...args);
  }

  // ── sweeps: see JobSweeps ──────────────────────────────────────────────────────────────────

  expire(...args: Parameters<JobSweeps['expire']>): ReturnType<JobSweeps['expire']> {
    return this.#sweeps.expire(...args);
  }
  timeOut(...args: Parameters<JobSweeps['timeOut']>): ReturnType<JobSweeps['timeOut']> {
    return this.#sweeps.timeOut(...args);
  }

  // ── stream buffer, webhook outbox, queue stats ─────────────────────────────────────────────

  appendStream(...args: Parameters<JobStreamBuffer['appendStream']>): ReturnType<JobStreamBuffer['appendStream']> {
    return this.#stream.appendStream(...args);
  }
  drainStream(...args: Parameters<JobStreamBuffer['drainStream']>): ReturnType<JobStreamBuffer['drainStream']> {
    return this.#stream.drainStream(...args);
  }
  insertWebhookDeliveries(
    ...args: Parameters<JobWebhookOutbox['insertWebhookDeliveries']>
  ): ReturnType<JobWebhookOutbox['insertWebhookDeliveries']> {
    return this.#outbox.insertWebhookDeliveries(...args);
  }
  queueStats(...args: Parameters<QueueStatsReader['queueStats']>): ReturnType<QueueStatsReader['queueStats']> {
    return this.#stats.queueStats(...args);
  }
}
