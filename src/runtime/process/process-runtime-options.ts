import type { Logger } from 'pino';
import type { ImageSpec } from '../../domain/image-spec.js';
import type { Clock } from '../../domain/clock.js';
import type { ProbeTiming } from '../health-probe.js';
import type { SamplerTimers } from '../interval-sampler.js';
import type { GraceTimer } from './process-group.js';
import type { EnvScreen } from './env-policy.js';

/** What the process runtime is built with (the composition root fills it from the config). */
export interface ProcessRuntimeOptions {
  images: Record<string, ImageSpec>;
  /** instance scratch folders go under `<dataDir>/instances/<id>` */
  dataDir: string;
  clock: Clock;
  logger: Logger;
  /** SIGTERM → SIGKILL grace. @default 5000 */
  stopGraceMs: number;
  /**
   * Which rules screen a tenant's env (env-policy.ts): `code` (what changes which code runs) on a
   * server of one account, `all` (application settings too) on one that serves several
   * (`runtime.process.allowMultipleAccounts`). @default 'all'
   */
  envScreen?: EnvScreen;
  /** `output.log` is rotated to `output.log.1` once it passes this size. @default 10 MiB */
  maxLogBytes?: number;
  /** How often live instances' logs are checked against `maxLogBytes`. @default 5000 */
  logCheckIntervalMs?: number;
  /**
   * How long after the server died without closing (kill -9, a crash) its watchdog stops the
   * instances it left running. A server started again on the same data dir within it kills them
   * at once. Config `runtime.process.orphanGraceMs`. @default 30000
   */
  orphanGraceMs?: number;
  /** How often the shared sampler measures live instances' CPU and memory (interval-sampler.ts). Config `runtime.statsIntervalMs`. @default 5000 */
  statsIntervalMs?: number;
  /** How the sampler waits (tests: fake timers). @default real timers */
  timers?: SamplerTimers;
  /**
   * How the usage meters read the time between two samples, a monotonic reading in ms (tests: the
   * clock of their fake timers, so that the time a CPU figure is taken over is the test's). @default performance.now()
   */
  usageClock?: Clock;
  /** How health checks read time and wait (tests: a manual timing). @default real time */
  probeTiming?: ProbeTiming;
  /** How the SIGTERM → SIGKILL grace of `stopGraceMs` is waited (tests: a timer they watch). @default real timers */
  graceTimer?: GraceTimer;
}
