/**
 * Each host's operations (docs/fleet.md "Exactly once, in effect"): queued in the database with
 * their bodies sealed, handed to the agent's long-poll until acknowledged, acknowledged once.
 *
 * A long-poll registers its waiter before it reads the database and waits after, so an enqueue
 * landing in between is never missed; an enqueue here wakes it at once, one on another replica
 * through the notify relay (topic `fleet-ops`, key the host id). A waiter woken without cause
 * reads again and waits out the rest of its time.
 */
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import { ApiError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { KeyedSignal, type CancelSignal } from '../jobs/job-signals.js';
import type { SecretBox } from '../store/secret-box.js';
import type { AckedOperation } from './fleet-events.js';
import type { OperationStore, OperationRow } from './operation-store.js';
import type { NewOperation, Operation, OperationAck } from './protocol.js';

/** Operations one answer carries at most; the agent asks again with `after` = the last seq. */
const OPERATIONS_PAGE = 100;
/** Longest text of a failed acknowledgement kept. */
const ACK_ERROR_MAX = 2000;

export const FLEET_OPS_TOPIC = 'fleet-ops';

/** The host an operation was for is unknown or revoked: nothing was queued (404 when it reaches a client). */
export class HostGoneError extends ApiError {
  constructor(hostId: string) {
    super('NOT_FOUND', `No live host with id "${hostId}" exists (unknown or revoked); nothing was queued.`);
  }
}

export interface OperationQueueDeps {
  store: OperationStore;
  secrets: SecretBox;
  clock: Clock;
  /** Forwards a wake-up to the other replicas. */
  publish?: ((topic: string, key: string, count: number) => void) | undefined;
  /** Operations acknowledged for the first time (by the agent, or failed here as unreadable). */
  onAcked: (hostId: string, acks: AckedOperation[]) => void;
  logger?: Pick<Logger, 'warn'> | undefined;
}

export const ackedOperation = (row: OperationRow): AckedOperation => ({
  opId: row.id,
  hostId: row.hostId,
  seq: row.seq,
  kind: row.kind,
  instanceId: row.instanceId,
  volumeId: row.volumeId,
  ok: row.ackOk === true,
  error: row.ackError,
  at: row.ackedAt ?? 0,
});

export class OperationQueue {
  readonly #deps: OperationQueueDeps;
  readonly #signal = new KeyedSignal();

  constructor(deps: OperationQueueDeps) {
    this.#deps = deps;
  }

  /** Queues an operation for a live host and wakes its agent's long-poll. 404 when the host is unknown or revoked. */
  async enqueue(hostId: string, op: NewOperation): Promise<Operation> {
    const id = `op-${newId(16)}`;
    const seq = await this.#deps.store.enqueue(
      hostId,
      {
        id,
        kind: op.kind,
        instanceId: 'instanceId' in op ? op.instanceId : null,
        volumeId: 'volumeId' in op ? op.volumeId : null,
        body: this.#deps.secrets.seal(JSON.stringify(op)),
      },
      this.#deps.clock.now(),
    );
    if (seq === null) throw new HostGoneError(hostId);
    this.#signal.notify(hostId);
    this.#deps.publish?.(FLEET_OPS_TOPIC, hostId, 1);
    return { ...op, id, seq };
  }

  /** The host's unacknowledged operations with `seq > after`, oldest first (a page of them). */
  async pending(hostId: string, after: number): Promise<Operation[]> {
    const rows = await this.#deps.store.pending(hostId, after, OPERATIONS_PAGE);
    const operations: Operation[] = [];
    const unreadable: OperationRow[] = [];
    for (const row of rows) {
      try {
        const body = JSON.parse(this.#deps.secrets.open(row.body)) as NewOperation;
        operations.push({ ...body, id: row.id, seq: row.seq });
      } catch {
        unreadable.push(row);
      }
    }
    if (unreadable.length > 0) await this.#failUnreadable(hostId, unreadable);
    return operations;
  }

  /**
   * `pending`, waiting up to `waitMs` (real time) for one when there is none; an empty list on
   * time out, when `signal` aborts or when the server closes. `check` runs before every read (it
   * throws when the host was revoked meanwhile).
   */
  async wait(
    hostId: string,
    after: number,
    options: { waitMs: number; signal?: CancelSignal },
    check: () => void = () => {},
  ): Promise<Operation[]> {
    const deadline = performance.now() + options.waitMs;
    for (;;) {
      const remaining = Math.max(0, deadline - performance.now());
      const waiter = remaining > 0 ? this.#signal.waiter(hostId, remaining, options.signal) : null;
      let settled = false;
      try {
        check();
        const operations = await this.pending(hostId, after);
        if (operations.length > 0 || !waiter) return operations;
        settled = true;
        if (!(await waiter.promise)) return [];
      } finally {
        // a waiter that answered needs no cancel (a cancel would pass its wake-up on to another poll)
        if (!settled) waiter?.cancel();
      }
    }
  }

  /**
   * Records the host's acknowledgements; the first result of an operation stands. Answers those
   * acknowledged now, and the ids ignored (no operation of this host).
   */
  async ack(
    hostId: string,
    acks: readonly OperationAck[],
  ): Promise<{ applied: AckedOperation[]; ignored: Array<{ opId: string; reason: string }> }> {
    const rows = acks.map((a) => ({
      id: a.opId,
      ok: a.ok,
      error: a.ok ? null : (a.error ?? 'the agent gave no reason').slice(0, ACK_ERROR_MAX),
    }));
    const { applied, unknown } = await this.#deps.store.ack(hostId, rows, this.#deps.clock.now());
    // An image operation's result rides with its first ack (it is not stored).
    const results = new Map(acks.flatMap((a) => (a.ok && a.result ? [[a.opId, a.result] as const] : [])));
    const acked = applied.map((row) => {
      const result = results.get(row.id);
      return result ? { ...ackedOperation(row), result } : ackedOperation(row);
    });
    if (acked.length > 0) this.#deps.onAcked(hostId, acked);
    return {
      applied: acked,
      ignored: unknown.map((opId) => ({ opId, reason: 'no operation of this host has this id' })),
    };
  }

  /** Wakes the long-polls of a host here (an enqueue on another replica, a revocation). */
  wake(hostId: string): void {
    this.#signal.notify(hostId);
  }

  /** Wakes every long-poll here, to read the database again (relayed wake-ups may have been lost). */
  wakeAll(): void {
    this.#signal.notifyAll();
  }

  /** Long-polls of the host waiting here. */
  waiting(hostId: string): number {
    return this.#signal.waiting(hostId);
  }

  /** Ends every long-poll now with what it has, and every later one at once (the server is closing). */
  close(): void {
    this.#signal.close();
  }

  /**
   * An operation whose body does not open (the server's secret key changed since it was queued)
   * can never be delivered: it is acknowledged as failed here, so whoever waits on it learns.
   */
  async #failUnreadable(hostId: string, rows: OperationRow[]): Promise<void> {
    const error = 'the control plane could not open this operation (its secret key changed since it was queued)';
    this.#deps.logger?.warn({ hostId, operations: rows.map((r) => r.id) }, error);
    const { applied } = await this.#deps.store.ack(
      hostId,
      rows.map((r) => ({ id: r.id, ok: false, error })),
      this.#deps.clock.now(),
    );
    if (applied.length > 0) this.#deps.onAcked(hostId, applied.map(ackedOperation));
  }
}
