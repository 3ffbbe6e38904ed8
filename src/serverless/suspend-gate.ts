import type { CancelSignal } from '../jobs/job-signals.js';

/** The gate's key of a worker: its endpoint and its id. */
const keyOf = (endpointId: string, workerId: string): string => `${endpointId}\u0000${workerId}`;

/**
 * Which workers are being suspended or are suspended (FlashBoot, issue 30), for the worker
 * protocol on this replica: their takes answer empty at once, and a take they hold open is ended
 * when the suspension begins — a job read for it in that instant goes back to the queue
 * (`WorkerJobs.take` releases what it read for an aborted take). Closed again when the worker
 * is resumed. Pings are not gated: the SDK's in-flight requests are answered as usual.
 */
export class SuspendGate {
  /** Closed workers, with the aborts of the takes they held open when it closed. */
  readonly #closed = new Set<string>();
  /** Open takes per worker: each one's abort. */
  readonly #open = new Map<string, Set<() => void>>();

  /** Whether the worker's takes answer empty (it is being suspended, or is). */
  isClosed(endpointId: string, workerId: string): boolean {
    return this.#closed.size > 0 && this.#closed.has(keyOf(endpointId, workerId));
  }

  /** Closes the gate for the worker and ends the takes it holds open. */
  close(endpointId: string, workerId: string): void {
    const key = keyOf(endpointId, workerId);
    this.#closed.add(key);
    for (const abort of [...(this.#open.get(key) ?? [])]) abort();
  }

  /** Opens the gate again (the worker was resumed, or its suspension failed). */
  open(endpointId: string, workerId: string): void {
    this.#closed.delete(keyOf(endpointId, workerId));
  }

  /**
   * The signal of one take: aborted when its client goes (`client`) or when the gate closes for
   * its worker. Call `done()` when the take ends.
   */
  takeSignal(endpointId: string, workerId: string, client: CancelSignal): CancelSignal & { done(): void } {
    const key = keyOf(endpointId, workerId);
    const listeners = new Set<() => void>();
    let closed = false;
    const abort = (): void => {
      if (closed) return;
      closed = true;
      for (const l of [...listeners]) l();
      listeners.clear();
    };
    let takes = this.#open.get(key);
    if (!takes) this.#open.set(key, (takes = new Set()));
    takes.add(abort);
    const open = this.#open;
    return {
      get aborted() {
        return closed || client.aborted;
      },
      addEventListener(_type, listener) {
        listeners.add(listener);
        client.addEventListener('abort', listener, { once: true });
      },
      removeEventListener(_type, listener) {
        listeners.delete(listener);
        client.removeEventListener('abort', listener);
      },
      done() {
        takes.delete(abort);
        if (takes.size === 0 && open.get(key) === takes) open.delete(key);
      },
    };
  }
}
