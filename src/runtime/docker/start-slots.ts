/**
 * At most `size` container starts in flight on one engine; the others wait their turn, in order.
 * An engine works through a burst of creates and starts a few at a time: sent all at once, the
 * last ones wait past the engine-call timeout and fail although the engine would have started
 * them (a 200-pod burst sent 130 pods to ERROR). Waiting here is not counted against that timeout.
 */
export class StartSlots {
  readonly #size: number;
  #running = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(size: number) {
    this.#size = Math.max(1, Math.floor(size));
  }

  /** Tasks waiting for a slot. */
  get queued(): number {
    return this.#waiting.length;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#running >= this.#size) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#running++;
    try {
      return await task();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    }
  }
}
