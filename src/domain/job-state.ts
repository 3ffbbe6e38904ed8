/**
 * The job state machine (DESIGN "Jobs: the hot path", wire-protocol §1–2). Pure: statuses, the
 * events that move a job, and `nextJobState`. The store's batched SQL guards its updates with
 * `changesFrom(event)`, so the SQL and this function cannot disagree on where an event applies.
 *
 *   IN_QUEUE ──take──▶ IN_PROGRESS ──complete──▶ COMPLETED
 *      ▲  │                 │  │  ├──fail──────▶ FAILED ─────┐
 *      │  │                 │  │  ├──timeout───▶ TIMED_OUT ──┤ retry
 *      │  └──cancel──┐      │  │  └──cancel────▶ CANCELLED   │
 *      │             ▼      │  └─worker-lost (budget spent)─▶ FAILED
 *      │         CANCELLED  └──worker-lost (budget left)──▶ IN_QUEUE
 *      └──────────────────────────────────────────────────────┘
 *   expire: deleted, whatever the state.
 *
 * `worker-lost` is also what befalls a job its worker's own take or ping shows it no longer holds
 * (`held-report.ts`): the same move, counted against the same retry budget.
 */

export const JOB_STATUSES = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** Statuses a job leaves only by `retry` (FAILED, TIMED_OUT) or not at all: it has its result. */
export const TERMINAL_JOB_STATUSES = [
  'COMPLETED',
  'FAILED',
  'CANCELLED',
  'TIMED_OUT',
] as const satisfies readonly JobStatus[];
export type TerminalJobStatus = (typeof TERMINAL_JOB_STATUSES)[number];

/** Statuses of a job that has no result yet: waiting in the queue or held by a worker. */
export const UNFINISHED_JOB_STATUSES = ['IN_QUEUE', 'IN_PROGRESS'] as const satisfies readonly JobStatus[];
export type UnfinishedJobStatus = (typeof UNFINISHED_JOB_STATUSES)[number];

/** The statuses a worker's result puts a job in. */
export const RESULT_JOB_STATUSES = ['COMPLETED', 'FAILED'] as const satisfies readonly JobStatus[];
export type JobResultStatus = (typeof RESULT_JOB_STATUSES)[number];

export const isTerminalJobStatus = (s: JobStatus): s is TerminalJobStatus =>
  (TERMINAL_JOB_STATUSES as readonly JobStatus[]).includes(s);

export const isUnfinishedJobStatus = (s: JobStatus): s is UnfinishedJobStatus =>
  (UNFINISHED_JOB_STATUSES as readonly JobStatus[]).includes(s);

/** Error text of a job whose worker stopped answering after the retry budget was spent. */
export const WORKER_LOST_ERROR = 'The worker running this job was lost and the retry budget is spent.';
/** Error text of a job stopped by its execution timeout. */
export const TIMED_OUT_ERROR = 'The job ran longer than its execution timeout.';

/** The facts of a job that the state machine reads and writes. */
export interface JobState {
  status: JobStatus;
  workerId: string | null;
  retries: number;
  /** When the job last entered the queue. */
  queuedAt: number;
  startedAt: number | null;
  completedAt: number | null;
  delayMs: number | null;
  executionMs: number | null;
  /** JSON text of the result (or of the latest progress while IN_PROGRESS); null when none. */
  output: string | null;
  error: string | null;
  /** The worker holding this job must stop it (cancel or timeout while running). */
  stopRequested: boolean;
}

export type JobEvent =
  | { type: 'take'; workerId: string }
  | { type: 'progress'; workerId: string; output: string | null }
  | { type: 'complete'; workerId: string; output: string | null }
  | { type: 'fail'; workerId: string; error: string }
  | { type: 'cancel' }
  | { type: 'timeout' }
  | { type: 'retry' }
  | { type: 'worker-lost'; retryBudget: number }
  | { type: 'expire' };

export type JobEventType = JobEvent['type'];

type JobRefusalCode = 'NOT_QUEUED' | 'NOT_RUNNING' | 'WRONG_WORKER' | 'NOT_RETRYABLE';

export interface JobRefusal {
  code: JobRefusalCode;
  status: JobStatus;
  event: JobEventType;
  reason: string;
}

export type JobTransition =
  /** The event applies: `job` is the new state. */
  | { kind: 'changed'; job: JobState }
  /** Accepted and dropped without change: late progress, a repeated result, cancel of a finished job. */
  | { kind: 'ignored'; job: JobState; reason: string }
  /** ttl expiry: the job is deleted. */
  | { kind: 'deleted' }
  | { kind: 'refused'; refusal: JobRefusal };

const assertNever = (x: never): never => {
  throw new Error(`unexpected value ${String(x)}`);
};

/**
 * The statuses from which `event` changes a job (as opposed to being ignored or refused). The
 * store's set-based updates filter on exactly these.
 */
export function changesFrom(event: JobEventType): readonly JobStatus[] {
  switch (event) {
    case 'take':
      return ['IN_QUEUE'];
    case 'progress':
    case 'complete':
    case 'fail':
    case 'timeout':
    case 'worker-lost':
      return ['IN_PROGRESS'];
    case 'cancel':
      return ['IN_QUEUE', 'IN_PROGRESS'];
    case 'retry':
      return ['FAILED', 'TIMED_OUT'];
    case 'expire':
      return JOB_STATUSES;
    default:
      return assertNever(event);
  }
}

const refuse = (job: JobState, event: JobEvent, code: JobRefusalCode, reason: string): JobTransition => ({
  kind: 'refused',
  refusal: { code, status: job.status, event: event.type, reason },
});

/** A worker's post for a job it does not (or no longer) hold: ignored once terminal, refused otherwise. */
function workerPostOutsideRun(job: JobState, event: Extract<JobEvent, { workerId: string }>): JobTransition {
  if (isTerminalJobStatus(job.status)) {
    const repeated =
      (event.type === 'complete' && job.status === 'COMPLETED' && job.output === event.output) ||
      (event.type === 'fail' && job.status === 'FAILED' && job.error === event.error);
    const reason = repeated
      ? 'the same result was already recorded'
      : event.type === 'progress'
        ? `late progress after the job became ${job.status}`
        : `the job is already ${job.status}`;
    return { kind: 'ignored', job, reason };
  }
  if (job.status === 'IN_PROGRESS')
    return refuse(
      job,
      event,
      'WRONG_WORKER',
      `The job is held by worker ${job.workerId ?? '(none)'}, not ${event.workerId}.`,
    );
  return refuse(job, event, 'NOT_RUNNING', `A ${job.status} job has no worker; it cannot take a ${event.type} post.`);
}

/** Where `event` takes a job at time `now`; pure. */
export function nextJobState(job: JobState, event: JobEvent, now: number): JobTransition {
  const holds = (workerId: string): boolean =>
    job.status === 'IN_PROGRESS' && (job.workerId === null || job.workerId === workerId);
  const finish = (status: JobStatus, patch: Partial<JobState>): JobTransition => ({
    kind: 'changed',
    job: {
      ...job,
      status,
      completedAt: now,
      executionMs: job.startedAt === null ? null : now - job.startedAt,
      ...patch,
    },
  });
  switch (event.type) {
    case 'take':
      if (job.status !== 'IN_QUEUE') return refuse(job, event, 'NOT_QUEUED', `A ${job.status} job cannot be taken.`);
      return {
        kind: 'changed',
        job: {
          ...job,
          status: 'IN_PROGRESS',
          workerId: event.workerId,
          startedAt: now,
          delayMs: now - job.queuedAt,
          output: null,
          error: null,
        },
      };
    case 'progress':
      if (!holds(event.workerId)) return workerPostOutsideRun(job, event);
      return { kind: 'changed', job: { ...job, workerId: event.workerId, output: event.output } };
    case 'complete':
      if (!holds(event.workerId)) return workerPostOutsideRun(job, event);
      return finish('COMPLETED', { workerId: event.workerId, output: event.output, error: null });
    case 'fail':
      if (!holds(event.workerId)) return workerPostOutsideRun(job, event);
      return finish('FAILED', { workerId: event.workerId, error: event.error });
    case 'cancel':
      if (job.status === 'IN_QUEUE') return finish('CANCELLED', {});
      if (job.status === 'IN_PROGRESS') return finish('CANCELLED', { stopRequested: true });
      return { kind: 'ignored', job, reason: `the job is already ${job.status}` };
    case 'timeout':
      if (job.status === 'IN_PROGRESS') return finish('TIMED_OUT', { stopRequested: true, error: TIMED_OUT_ERROR });
      if (isTerminalJobStatus(job.status)) return { kind: 'ignored', job, reason: `the job is already ${job.status}` };
      return refuse(job, event, 'NOT_RUNNING', 'Only a running job can time out; queue time does not count.');
    case 'retry':
      if (job.status !== 'FAILED' && job.status !== 'TIMED_OUT')
        return refuse(
          job,
          event,
          'NOT_RETRYABLE',
          `Only FAILED or TIMED_OUT jobs can be retried; this job is ${job.status}.`,
        );
      return {
        kind: 'changed',
        job: {
          ...job,
          status: 'IN_QUEUE',
          retries: job.retries + 1,
          queuedAt: now,
          workerId: null,
          startedAt: null,
          completedAt: null,
          delayMs: null,
          executionMs: null,
          output: null,
          error: null,
          stopRequested: false,
        },
      };
    case 'worker-lost':
      if (job.status !== 'IN_PROGRESS')
        return { kind: 'ignored', job, reason: `a ${job.status} job is not held by a worker` };
      if (job.retries >= event.retryBudget) return finish('FAILED', { error: WORKER_LOST_ERROR });
      return {
        kind: 'changed',
        job: {
          ...job,
          status: 'IN_QUEUE',
          retries: job.retries + 1,
          queuedAt: now,
          workerId: null,
          startedAt: null,
          delayMs: null,
          output: null,
        },
      };
    case 'expire':
      return { kind: 'deleted' };
    default:
      return assertNever(event);
  }
}
