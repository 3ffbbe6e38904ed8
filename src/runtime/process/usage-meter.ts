import type { Clock } from '../../domain/clock.js';
import type { InstanceStatus } from '../runtime.js';
import { cpuPercent, groupUsage, memoryPercent, scanProcesses, type CpuSample, type ProcEntry } from './proc-stats.js';

type Stats = NonNullable<InstanceStatus['stats']>;

/** CPU utilisation is measured between samples at least this far apart. */
const MIN_SAMPLE_MS = 200;

/** A monotonic reading in ms: the time between two samples is not moved by changes of the wall clock. */
const monotonicClock: Clock = { now: () => performance.now() };

/** The CPU and memory use of one instance's process group, against the instance's allotment. */
export class UsageMeter {
  readonly #pgid: number;
  readonly #vcpus: number;
  readonly #memoryGb: number;
  readonly #clock: Clock;
  /** the previous CPU sample; the first is (0 ticks, creation time: the spawn) */
  #sample: CpuSample;
  #cpuUtil = 0;
  #latest: Stats | null = null;

  /** `clock`: how the time between samples is read (tests: the clock of their fake timers). @default performance.now() */
  constructor(pgid: number, allotment: { vcpus: number; memoryGb: number }, clock: Clock = monotonicClock) {
    this.#pgid = pgid;
    this.#vcpus = allotment.vcpus;
    this.#memoryGb = allotment.memoryGb;
    this.#clock = clock;
    this.#sample = { ticks: 0, at: clock.now() };
  }

  /** The figures of the last {@link measure} (the shared sampler's last turn); null before the first. */
  get latest(): Stats | null {
    return this.#latest;
  }

  /** The group's figures in a process table read just now; kept as {@link latest}. */
  measure(table: readonly ProcEntry[]): Stats {
    const usage = groupUsage(table, this.#pgid);
    const sample = { ticks: usage.cpuTicks, at: this.#clock.now() };
    // Calls closer together than MIN_SAMPLE_MS repeat the last figure rather than measure noise.
    if (sample.at - this.#sample.at >= MIN_SAMPLE_MS) {
      this.#cpuUtil = cpuPercent(this.#sample, sample, this.#vcpus);
      this.#sample = sample;
    }
    this.#latest = {
      cpuUtil: this.#cpuUtil,
      memoryUtil: memoryPercent(usage.rssBytes, this.#memoryGb),
      memoryBytes: usage.rssBytes,
    };
    return this.#latest;
  }
}

/**
 * One turn of the process runtime's shared sampler (interval-sampler.ts): one walk of /proc for
 * every live instance, each meter keeping its figures for `inspect()`/`list()` to answer.
 * Without /proc (macOS) the meters keep none, and the instances report no stats.
 */
export async function measureAll(processes: Iterable<{ usage: UsageMeter }>): Promise<void> {
  const table = await scanProcesses();
  if (!table) return;
  for (const proc of processes) proc.usage.measure(table);
}
