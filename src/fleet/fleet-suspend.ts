/**
 * Suspend and resume over the fleet (the runtime port's `suspend`/`resume`, FlashBoot): the
 * operation goes to the instance's host, its agent applies it through its runtime (the engine's
 * pause, or SIGSTOP) and acknowledges it; the call resolves on that ack, the instance then reads
 * `suspended` (or `running`), as the agent's next report says too.
 *
 * An agent older than these operations acknowledges them with "unknown operation kind": the call
 * rejects saying to update gantry agent on that host, and the host counts as one that cannot
 * suspend (`canSuspend(hostId)` false) until its agent reports in full again (it reconnected,
 * perhaps updated). An ack that does not come within {@link ACK_WAIT_MS} (the host unreachable)
 * rejects the call; the operation stays queued for the agent, and the state its report gives when
 * it is back is what counts. With several replicas the other replicas learn the new state from
 * the agent's report; only the replica that asked waits on the ack.
 *
 * A control plane that (re)started adopts its hosts' instances as `unknown` until each host's
 * first full report (fleet-ledger.ts `attached`): a suspended worker adopted so, and resumed for
 * a job before its agent reconnected, waits for that report (within the same ack wait, or until
 * the host is found unreachable) rather than being refused — a refusal would have the autoscaler
 * remove the worker it just adopted.
 */
import { hideHostPaths } from '../runtime/host-paths.js';
import type { InstanceState } from '../runtime/runtime.js';
import { whyRevoked, type FleetLedger } from './fleet-ledger.js';
import { hostAway } from './fleet-instances.js';
import type { NewOperation, Operation, OperationAck } from './protocol.js';

/** How long a suspend or resume waits for its host's ack. */
const ACK_WAIT_MS = 60_000;
/** Longest reason kept from an agent's refusal. */
const MAX_REASON = 2_000;

type Kind = 'suspend' | 'resume';

/** What the operation turns the instance from, and into. */
const STATES: Record<Kind, { from: InstanceState; to: InstanceState; done: string }> = {
  suspend: { from: 'running', to: 'suspended', done: 'suspended' },
  resume: { from: 'suspended', to: 'running', done: 'resumed' },
};

/** How the fleet runtime sends an instance's operation, after its earlier ones. */
type Send = (instanceId: string, hostId: string, op: NewOperation) => Promise<Operation>;

export class FleetSuspension {
  readonly #ledger: FleetLedger;
  readonly #send: Send;
  readonly #ackWaitMs: number;
  /** hosts whose agent answered a suspend or resume as an unknown operation */
  readonly #unable = new Set<string>();
  /** calls waiting for a host's first full report since this control plane started, by host */
  readonly #awaitingReport = new Map<string, Array<() => void>>();

  constructor(ledger: FleetLedger, send: Send, ackWaitMs = ACK_WAIT_MS) {
    this.#ledger = ledger;
    this.#send = send;
    this.#ackWaitMs = ackWaitMs;
  }

  /** Whether the host's agent is known to apply suspend and resume (not one that refused them as unknown, not revoked). */
  canSuspend(hostId: string): boolean {
    return !this.#unable.has(hostId) && whyRevoked(this.#ledger, hostId) === null;
  }

  /** The host's agent reported in full (it reconnected, perhaps updated): it is asked again. */
  heardInFull(hostId: string): void {
    this.#unable.delete(hostId);
  }

  /** The host's word is in (its full report applied), or it will not come soon (found unreachable): waiters go on. */
  settled(hostId: string): void {
    for (const go of this.#awaitingReport.get(hostId) ?? []) go();
    this.#awaitingReport.delete(hostId);
  }

  async apply(kind: Kind, id: string): Promise<void> {
    const { table } = this.#ledger;
    let t = table.tracked.get(id);
    if (!t) throw new Error(`cannot ${kind} instance "${id}": it does not run on any host`);
    const host = table.knownHost(t.hostId);
    if (table.visible(t).state === 'unknown' && host?.reported === false && hostAway(host) === null) {
      await this.#untilSettled(t.hostId);
      t = table.tracked.get(id);
      if (!t) throw new Error(`cannot ${kind} instance "${id}": it does not run on any host`);
    }
    const { from, to, done } = STATES[kind];
    const seen = table.visible(t);
    if (seen.state === to) return;
    if (seen.state !== from) {
      const why = seen.reason ? ` (${seen.reason})` : '';
      throw new Error(`instance "${id}" is ${seen.state}${why}: only a ${from} instance can be ${done}`);
    }
    if (this.#unable.has(t.hostId)) throw tooOld(t.hostId, kind, null);
    const op = await this.#send(id, t.hostId, { kind, instanceId: id }).catch((err: unknown) => {
      throw new Error(`could not hand the ${kind} of instance "${id}" to host ${t.hostId}: ${(err as Error).message}`, {
        cause: err,
      });
    });
    const ack = await new Promise<OperationAck>((resolve, reject) => {
      const ceiling = setTimeout(
        () =>
          reject(
            new Error(
              `host ${t.hostId} did not acknowledge the ${kind} of instance "${id}" within ${this.#ackWaitMs} ms; its agent applies it when it gets to it`,
            ),
          ),
        this.#ackWaitMs,
      );
      ceiling.unref();
      this.#ledger.ops.set(op.id, {
        kind,
        hostId: t.hostId,
        instanceId: id,
        tracked: t,
        // Applied with the host's acks, before the report that came with them.
        settle: (a) => {
          clearTimeout(ceiling);
          if (a.ok && table.tracked.get(id) === t && t.status.state === from)
            table.update(t, { ...t.status, state: to, reason: null });
          resolve(a);
        },
      });
    });
    if (ack.ok) return;
    const error = hideHostPaths((ack.error ?? '').slice(0, MAX_REASON));
    if (/unknown operation kind/i.test(error)) {
      this.#unable.add(t.hostId);
      this.#ledger.deps.logger.warn(
        { hostId: t.hostId, op: kind },
        "the host's agent predates suspend and resume: update gantry agent there",
      );
      throw tooOld(t.hostId, kind, error);
    }
    throw new Error(`host ${t.hostId} could not ${kind} instance "${id}": ${error || 'no reason given'}`);
  }

  /** Resolves once `settled(hostId)` is called, or after the ack wait. */
  #untilSettled(hostId: string): Promise<void> {
    return new Promise((resolve) => {
      const ceiling = setTimeout(resolve, this.#ackWaitMs);
      ceiling.unref();
      const waiting = this.#awaitingReport.get(hostId) ?? [];
      waiting.push(() => {
        clearTimeout(ceiling);
        resolve();
      });
      this.#awaitingReport.set(hostId, waiting);
    });
  }
}

const tooOld = (hostId: string, kind: Kind, said: string | null): Error =>
  new Error(
    `host ${hostId} cannot ${kind} instances: its agent does not know the ${kind} operation; update gantry agent on that host${said ? ` (it said: ${said})` : ''}`,
  );
