/**
 * Work serialized per key: steps on one key run one after another, in the order they were queued;
 * steps on different keys run concurrently. A step that fails does not stop the ones after it.
 */
export class SerialQueues {
  /** Per key: the tail of its queue (settles once its last step has run). */
  readonly #queues = new Map<string, Promise<unknown>>();

  /** Runs `fn` once every step queued on `key` before it has run; answers what `fn` does. */
  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(key) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(fn);
    const tail = run.catch(() => undefined);
    this.#queues.set(key, tail);
    void tail.then(() => {
      if (this.#queues.get(key) === tail) this.#queues.delete(key);
    });
    return run;
  }

  /** Whether steps are queued or running on `key`. */
  has(key: string): boolean {
    return this.#queues.has(key);
  }

  /** Waits until every step queued on `key` has run. */
  async idle(key: string): Promise<void> {
    while (this.#queues.has(key)) await this.#queues.get(key)!.catch(() => undefined);
  }

  /** Waits until no key has a step queued. */
  async drain(): Promise<void> {
    while (this.#queues.size > 0) await Promise.allSettled([...this.#queues.values()]);
  }
}
