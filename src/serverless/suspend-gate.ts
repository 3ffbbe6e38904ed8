import type { CancelSignal } from '../jobs/job-signals.js';

/** The gate's key of a worker: its endpoint and its id. */
const keyOf = (endpointId: string, workerId: string): string => `${endpointId}\u0000${workerId}`;

/** The relay's topics: a replica closed a worker's gate, or opened it again. */
export const GATE_CLOSE = 'gate:close';
export const GATE_OPEN = 'gate:open';

/** What the gate tells other replicas through (the relay's `publish` and `flush`). */
export interface GateRelay {
  publish(topic: string, key: string, count: number): void;
  flush(): Promise<void>;
}

/**
 * Which workers are being suspended or are suspended (FlashBoot, issue 30), for the worker
 * protocol on this replica: their takes answer empty at once, and a take they hold open is ended
 * when the suspension begins — a job read for it in that instant goes back to the queue
 * (`WorkerJobs.take` releases what it read for an aborted take). Closed again when the worker
 * is resumed. Pings are not gated: the SDK's in-flight requests are answered as usual.
 *
 * Across replicas (PostgreSQL): a worker's takes may land on any replica, so closing and opening
 * go to the others through the relay (`relayTo`), which close the gate there too and end the
 * takes it holds open there; the suspending replica waits until its word is sent (`sent`) before
 * it freezes the worker. A replica that may have missed words (its relay session dropped:
 * `forgetRelayed`) opens the gates it closed on others' word — a worker is never starved of jobs on
 * a stale word; what a late word could let through is a job handed out in the moment of the
 * freeze, which the suspension gives back (`WorkerJobs.workerReleased`).
 */
export class SuspendGate {
  /** Closed workers, with the aborts of the takes they held open when it closed. */
  readonly #closed = new Set<string>();
  /** Of those, the ones closed on another replica's word. */
  readonly #relayed = new Set<string>();
  #relay: GateRelay | null = null;
  /** Open takes per worker: each one's abort. */
  readonly #open = new Map<string, Set<() => void>>();

  /** Whether the worker's takes answer empty (it is being suspended, or is). */
  isClosed(endpointId: string, workerId: string): boolean {
    return this.#closed.size > 0 && this.#closed.has(keyOf(endpointId, workerId));
  }

  /** Closes the gate for the worker and ends the takes it holds open, here and on the other replicas. */
  close(endpointId: string, workerId: string): void {
    this.#close(keyOf(endpointId, workerId));
    this.#relay?.publish(GATE_CLOSE, `${endpointId}/${workerId}`, 1);
  }

  /** Opens the gate again (the worker was resumed, its suspension failed, or it is gone), here and elsewhere. */
  open(endpointId: string, workerId: string): void {
    const key = keyOf(endpointId, workerId);
    const was = this.#closed.delete(key);
    this.#relayed.delete(key);
    if (was) this.#relay?.publish(GATE_OPEN, `${endpointId}/${workerId}`, 1);
  }

  /** Tells the other replicas of each close and open from now on. */
  relayTo(relay: GateRelay): void {
    this.#relay = relay;
  }

  /** Resolves once the words said so far are sent to the other replicas (at once without a relay). */
  async sent(): Promise<void> {
    await this.#relay?.flush();
  }

  /**
   * Another replica's word (a relay topic): answers whether it was the gate's. The gate closes or
   * opens here, and is not told on again.
   */
  deliver(topic: string, key: string): boolean {
    if (topic !== GATE_CLOSE && topic !== GATE_OPEN) return false;
    const slash = key.indexOf('/');
    if (slash < 1) return true;
    const k = keyOf(key.slice(0, slash), key.slice(slash + 1));
    if (topic === GATE_OPEN) {
      // (never one this replica closed itself: only its own resumption opens that)
      if (this.#relayed.delete(k)) this.#closed.delete(k);
    } else if (!this.#closed.has(k)) {
      this.#relayed.add(k);
      this.#close(k);
    }
    return true;
  }

  /** Words from other replicas may have been missed: the gates closed on their word open. */
  forgetRelayed(): void {
    for (const k of this.#relayed) this.#closed.delete(k);
    this.#relayed.clear();
  }

  #close(key: string): void {
    this.#closed.add(key);
    for (const abort of [...(this.#open.get(key) ?? [])]) abort();
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
