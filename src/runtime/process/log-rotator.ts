import { DEFAULT_MAX_LOG_BYTES, capLog, logSize } from './output-log.js';

/** An instance's output.log, and where its current run's output begins in it. */
export interface RotatedLog {
  logPath: string;
  logOffset: number;
}

export interface LogRotatorOptions {
  /** `output.log` is rotated to `output.log.1` once it passes this size. @default 10 MiB */
  maxLogBytes?: number;
  /** How often live instances' logs are checked against `maxLogBytes`. @default 5000 */
  logCheckIntervalMs?: number;
}

/**
 * One timer for all instances keeps every live instance's output.log under the cap (see
 * output-log.ts). A rotation moves the start of the current run's output back to the log's start.
 */
export class LogRotator {
  readonly #options: LogRotatorOptions;
  /** The logs of the instances alive at the moment of a check. */
  readonly #logs: () => Iterable<RotatedLog>;
  #timer: NodeJS.Timeout | null = null;
  #checking = false;

  constructor(options: LogRotatorOptions, logs: () => Iterable<RotatedLog>) {
    this.#options = options;
    this.#logs = logs;
  }

  get maxLogBytes(): number {
    return this.#options.maxLogBytes ?? DEFAULT_MAX_LOG_BYTES;
  }

  /** Starts the checks, unless they run already. */
  watch(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.#check(), this.#options.logCheckIntervalMs ?? 5_000);
    this.#timer.unref();
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  async #check(): Promise<void> {
    if (this.#checking) return;
    this.#checking = true;
    try {
      for (const log of this.#logs()) {
        if (await capLog(log.logPath, this.maxLogBytes).catch(() => false)) {
          log.logOffset = Math.min(log.logOffset, await logSize(log.logPath));
        }
      }
    } finally {
      this.#checking = false;
    }
  }
}
