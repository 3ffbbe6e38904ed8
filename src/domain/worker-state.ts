/**
 * A serverless worker's statuses, as the `workers` table keeps them. The autoscaler writes
 * `initializing` (launched, not heard from yet) and `throttled`; the workers registry writes the
 * others from what workers send, and `suspended` when the autoscaler froze a FlashBoot endpoint's
 * idle worker (serverless/worker-suspension.ts): alive, holding its host's resources and its key,
 * exempt from the heartbeat-loss rule, taking no job until it is resumed. `dead` is final: a worker that calls again is a new sighting.
 */

export const WORKER_STATUSES = [
  'initializing',
  'idle',
  'running',
  'throttled',
  'unhealthy',
  'suspended',
  'dead',
] as const;
export type WorkerStatus = (typeof WORKER_STATUSES)[number];

/** Statuses of a worker that is up and taking work. */
export const LIVE_WORKER_STATUSES = ['idle', 'running'] as const satisfies readonly WorkerStatus[];

/** Statuses a worker row never leaves on its own. */
export const TERMINAL_WORKER_STATUSES = ['dead'] as const satisfies readonly WorkerStatus[];

/** Statuses of a worker whose instance still runs, and so holds what it was given on its host. */
export const HOLDING_WORKER_STATUSES = [
  'initializing',
  'idle',
  'running',
  'throttled',
  'unhealthy',
  'suspended',
] as const satisfies readonly WorkerStatus[];

export const isTerminalWorkerStatus = (s: WorkerStatus): boolean =>
  (TERMINAL_WORKER_STATUSES as readonly WorkerStatus[]).includes(s);
