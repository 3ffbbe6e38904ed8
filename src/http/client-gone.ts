import type { FastifyReply } from 'fastify';
import type { CancelSignal } from '../jobs/job-signals.js';

/** Set when the client went away before its answer was written; listeners run once, then. */
class ClientGone implements CancelSignal {
  aborted = false;
  #listeners: Array<() => void> | null = null;

  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.aborted) (this.#listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.#listeners?.indexOf(listener) ?? -1;
    if (i >= 0) this.#listeners!.splice(i, 1);
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listeners = this.#listeners ?? [];
    this.#listeners = null;
    for (const listener of listeners) listener();
  }
}

/** Aborted when the client goes away before its answer was written (ends long-polls early). */
export function clientGone(reply: FastifyReply): CancelSignal {
  const gone = new ClientGone();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) gone.abort();
  });
  return gone;
}
