import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import { heldLease, type Lease } from '../store/leases.js';
import type { JobSweeper, TickResult } from './job-sweeper.js';
import type { WorkerJobs } from './worker-jobs.js';

/** The workers' signs of life, as the timekeeper keeps them (the serverless `WorkersRegistry`). */
interface WorkerLiveness {
  /** Writes the signs of life given since the last pass. */
  flush(now: number): Promise<unknown>;
  /** The workers silent since before `cutoff`, now marked dead. */
  expire(cutoff: number, now: number): Promise<Array<{ id: string; endpointId: string }>>;
  refreshLiveCounts(): Promise<void>;
}

export interface TimekeeperDeps {
  jobs: { sweeper: Pick<JobSweeper, 'tick'>; worker: Pick<WorkerJobs, 'workerLost'> };
  workers: WorkerLiveness;
  clock: Clock;
  logger?: Pick<Logger, 'warn' | 'error' | 'info'>;
  /** Which replica keeps job time (the others only write their workers' signs of life). @default always held */
  lease?: Lease;
  config: {
    /** @default 1000 */
    timekeeperIntervalMs: number;
    /** @default 30000 */
    heartbeatTimeoutMs: number;
  };
}

export interface TimekeeperPass extends TickResult {
  /** Workers declared lost in this pass, with what became of their jobs. */
  lostWorkers: Array<{ id: string; requeued: string[]; failed: string[] }>;
}

/**
 * The loop that keeps job time: every interval it writes the workers' signs of life, times out
 * and expires jobs (`JobSweeper.tick`), and declares workers silent for longer than the heartbeat
 * timeout lost, so their jobs go back to the queue. Time comes from the injected clock; tests call
 * `tick()` directly on a fake clock.
 *
 * With several replicas, only the holder of the lease runs full passes; every other replica still
 * writes the signs of life its own workers gave (they are kept in memory where they arrived) and
 * re-reads the live-worker counts, so the holder judges every worker by the table.
 */
export class Timekeeper {
  readonly #deps: TimekeeperDeps;
  readonly #lease: Lease;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<unknown> | null = null;
  #stopped = true;

  constructor(deps: TimekeeperDeps) {
    this.#deps = deps;
    this.#lease = deps.lease ?? heldLease('timekeeper');
  }

  /** One pass at `now`. */
  async tick(now: number = this.#deps.clock.now()): Promise<TimekeeperPass> {
    const { jobs, workers, config } = this.#deps;
    await workers.flush(now);
    const result = await jobs.sweeper.tick(now);
    const lostWorkers: TimekeeperPass['lostWorkers'] = [];
    for (const worker of await workers.expire(now - config.heartbeatTimeoutMs, now)) {
      const moved = await jobs.worker.workerLost(worker.id, worker.endpointId);
      lostWorkers.push({ id: worker.id, ...moved });
      this.#deps.logger?.warn(
        { workerId: worker.id, endpointId: worker.endpointId, ...moved },
        'worker lost: no heartbeat',
      );
    }
    await workers.refreshLiveCounts();
    return { ...result, lostWorkers };
  }

  /** The pass of a replica not holding the lease: its own workers' signs of life only. */
  async replicaTick(now: number = this.#deps.clock.now()): Promise<void> {
    await this.#deps.workers.flush(now);
    await this.#deps.workers.refreshLiveCounts();
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#schedule();
  }

  /** Stops the loop; resolves once a pass under way has ended. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#running;
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#running = (this.#lease.isHeld() ? this.tick() : this.replicaTick())
        .catch((err: unknown) => this.#deps.logger?.error({ err }, 'timekeeper pass failed'))
        .finally(() => {
          this.#running = null;
          this.#schedule();
        });
    }, this.#deps.config.timekeeperIntervalMs);
    this.#timer.unref?.();
  }
}
