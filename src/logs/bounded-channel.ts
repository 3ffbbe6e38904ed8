/**
 * A queue between producers and one reader that holds at most `capacity` items: `push` waits while
 * it is full, so a slow reader stops the producers instead of growing memory.
 */
export class BoundedChannel<T> {
  readonly #capacity: number;
  readonly #items: T[] = [];
  #closed = false;
  #readerWake: (() => void) | null = null;
  readonly #pushWakes: Array<() => void> = [];

  constructor(capacity: number) {
    this.#capacity = Math.max(1, capacity);
  }

  get size(): number {
    return this.#items.length;
  }

  /** Adds an item, waiting for room; answers false (dropping it) once the channel is closed. */
  async push(item: T): Promise<boolean> {
    while (!this.#closed && this.#items.length >= this.#capacity)
      await new Promise<void>((resolve) => this.#pushWakes.push(resolve));
    if (this.#closed) return false;
    this.#items.push(item);
    this.#readerWake?.();
    return true;
  }

  /** A last item, past the capacity if need be, then {@link close}: the reader ends with it. */
  finish(item: T): void {
    if (this.#closed) return;
    this.#items.push(item);
    this.close();
  }

  /** No more items: the reader ends once it has taken those queued; waiting producers are released. */
  close(): void {
    this.#closed = true;
    this.#readerWake?.();
    for (const w of this.#pushWakes.splice(0)) w();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      const item = this.#items.shift();
      if (item !== undefined) {
        this.#pushWakes.shift()?.();
        yield item;
        continue;
      }
      if (this.#closed) return;
      await new Promise<void>((resolve) => (this.#readerWake = resolve));
      this.#readerWake = null;
    }
  }
}
