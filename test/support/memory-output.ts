/**
 * An instance's output in memory, appended by a test, that behaves as the runtime port says
 * `output()` does: the kept lines a query selects (`sinceMs`, then the last `tail`), then, with
 * `follow`, new lines as they are appended, each taken only when the reader asks for it, until
 * `end()` or the reader leaves. It counts the follows open on it. For tests of what sits over the
 * port (src/runtime/shared-output.ts, src/logs/log-streams.ts), where each line's moment matters.
 */
import type { OutputLine, OutputQuery } from '../../src/runtime/runtime.js';

export class MemoryOutput {
  readonly lines: OutputLine[] = [];
  /** follows of it open now, and the most open at once */
  follows = 0;
  mostFollows = 0;
  followsOpened = 0;
  /** lines the follows took from it */
  taken = 0;
  #ended = false;
  readonly #wakes = new Set<() => void>();

  append(ts: number, ...texts: string[]): void {
    for (const line of texts) this.lines.push({ ts, line });
    this.#wakeAll();
  }

  end(): void {
    this.#ended = true;
    this.#wakeAll();
  }

  readonly read = (_id: string, query: OutputQuery): AsyncIterable<OutputLine> => this.#read(query);

  async *#read(query: OutputQuery): AsyncGenerator<OutputLine> {
    const kept = this.lines.length;
    let selected = this.lines.slice(0, kept).filter((l) => query.sinceMs === undefined || l.ts >= query.sinceMs);
    if (query.tail !== undefined) selected = query.tail === 0 ? [] : selected.slice(-query.tail);
    for (const l of selected) {
      if (query.signal.aborted) return;
      yield l;
    }
    if (!query.follow) return;
    this.follows++;
    this.followsOpened++;
    this.mostFollows = Math.max(this.mostFollows, this.follows);
    try {
      let next = kept;
      for (;;) {
        if (query.signal.aborted) return;
        if (next < this.lines.length) {
          this.taken++;
          yield this.lines[next++]!;
          continue;
        }
        if (this.#ended) return;
        await new Promise<void>((resolve) => {
          const wake = (): void => {
            this.#wakes.delete(wake);
            query.signal.removeEventListener('abort', wake);
            resolve();
          };
          this.#wakes.add(wake);
          query.signal.addEventListener('abort', wake, { once: true });
        });
      }
    } finally {
      this.follows--;
    }
  }

  #wakeAll(): void {
    for (const wake of [...this.#wakes]) wake();
  }
}
