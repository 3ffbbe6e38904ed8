/**
 * The agent's reports (`POST /agent/v1/report`, docs/fleet.md): the full instance list at every
 * (re)connect, then the changes the runtime tells and the operations' acknowledgements, sent at
 * once but at most one report per `batchMs` (what comes within that window after a report goes
 * together in the next); the capacity when it changed; and a bare heartbeat when nothing else
 * went out for `heartbeatMs`. What a failed report carried is not lost: acknowledgements stay
 * until a report with them succeeds, and the next report is full.
 *
 * A report is built after the operations it acknowledges: an operation is acknowledged only once
 * applied (the runtime and the kept set show it), and its instance's item is made when the report
 * is, from what is known then, so the control plane (which applies the acks, then the items) never
 * reads a status from before the operation. Instances the agent stopped are reported `kept`, in
 * the report after the stop and in every full one, until a start or a remove.
 */
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import type { HostCapacity, InstanceReport, OperationAck, ReportRequest } from '../fleet/protocol.js';
import type { InstanceOwner, InstanceStatus, Runtime } from '../runtime/runtime.js';
import type { AgentTransport } from './agent-transport.js';
import type { ServerRotation } from './server-rotation.js';
import type { Timers } from './timers.js';

export interface ReportLoopDeps {
  transport: Pick<AgentTransport, 'report'>;
  rotation: ServerRotation;
  credential: string;
  runtime: Pick<Runtime, 'list'>;
  /** each instance's owner (instances without one are not reported) */
  owners: ReadonlyMap<string, InstanceOwner>;
  /** instances stopped and kept (not in the runtime's `list()`), reported `kept: true` */
  kept: ReadonlySet<string>;
  clock: Clock;
  timers: Timers;
  logger: Pick<Logger, 'warn'>;
  /** A report failed (not the last one): the agent's failure handling. */
  failed(err: unknown, epoch: number, server: string): void;
  /** The control plane named its job API's URL (the first time, and whenever it changes). */
  jobUrl?(url: string): void;
  /** Ends the loop. */
  signal: AbortSignal;
  config: { heartbeatMs: number; batchMs: number };
}

export class ReportLoop {
  readonly #deps: ReportLoopDeps;
  readonly #acks = new Map<string, OperationAck>();
  readonly #warnedRefused = new Set<string>();
  /** instances to report, with the last status the runtime told (null: none since an operation; see {@link operated}) */
  #changes = new Map<string, InstanceStatus | null>();
  /** the next report carries every instance (the first, and the first after a failed call) */
  #fullDue = true;
  #capacityDue: HostCapacity | null = null;
  #lastReportAt = -Infinity;
  /** the job API's URL the control plane last named */
  #jobUrl: string | null = null;
  /** when the last report with the instances' figures went out */
  #statsAt = -Infinity;
  #wake: AbortController | null = null;

  constructor(deps: ReportLoopDeps) {
    this.#deps = deps;
    deps.signal.addEventListener('abort', () => this.#wake?.abort(), { once: true });
  }

  /** An instance changed. */
  changed(status: InstanceStatus): void {
    this.#changes.set(status.id, status);
    this.#nudge();
  }

  /**
   * A stop or remove was applied to the instance: what the runtime told of it before no longer
   * holds. Its next item is made from the kept set (a stop) or left out (a remove: it is gone).
   */
  operated(id: string): void {
    this.#changes.set(id, null);
    this.#nudge();
  }

  acknowledge(ack: OperationAck): void {
    this.#acks.set(ack.opId, ack);
    this.#nudge();
  }

  /** The capacity to tell in the next report. */
  capacity(capacity: HostCapacity): void {
    this.#capacityDue = capacity;
    this.#nudge();
  }

  /** A call failed: the next report (once the backoff allows) is full. */
  reconnecting(): void {
    this.#fullDue = true;
    this.#nudge();
  }

  async run(): Promise<void> {
    const { signal, timers, rotation } = this.#deps;
    while (!signal.aborted) {
      if (!this.#fullDue && this.#capacityDue === null) {
        if (!this.#hasNews())
          await this.#nap(this.#lastReportAt + this.#deps.config.heartbeatMs - this.#deps.clock.now());
        if (signal.aborted) return;
        // News goes out at once, unless a report went out less than batchMs ago: then what comes
        // within the window goes together (a burst of starts sends a report per window, not each).
        const wait = this.#lastReportAt + this.#deps.config.batchMs - this.#deps.clock.now();
        if (this.#hasNews() && wait > 0) await timers.sleep(wait, signal);
        if (signal.aborted) return;
      }
      await rotation.ready(signal);
      if (signal.aborted) return;
      await this.report();
    }
  }

  /** Sends what is pending; `last`: the one at stop (one try, a failure only logged). */
  async report(options: { last?: boolean } = {}): Promise<void> {
    const { transport, rotation, clock, logger } = this.#deps;
    const { epoch, server } = rotation;
    const body: ReportRequest = {};
    const full = this.#fullDue;
    this.#fullDue = false;
    const changes = this.#changes;
    this.#changes = new Map();
    const capacity = this.#capacityDue;
    if (capacity) body.capacity = capacity;
    const acks = [...this.#acks.values()];
    if (acks.length > 0) body.acks = acks;
    const sentAt = clock.now();
    try {
      // The figures go out with a report at most once per heartbeat: they change all the time, and
      // nobody reads them closer than that.
      const withStats = sentAt - this.#statsAt >= this.#deps.config.heartbeatMs;
      const statuses = full || withStats ? await this.#deps.runtime.list() : null;
      if (full) body.instances = { full: true, items: this.#fullItems(statuses!) };
      else if (changes.size > 0) body.instances = { full: false, items: this.#changedItems(changes) };
      if (withStats) {
        const stats: NonNullable<ReportRequest['stats']> = {};
        for (const s of statuses!) if (s.stats && this.#deps.owners.has(s.id)) stats[s.id] = s.stats;
        if (Object.keys(stats).length > 0) body.stats = stats;
      }
      const answer = await transport.report(server, this.#deps.credential, body);
      rotation.succeeded(epoch);
      this.#lastReportAt = sentAt;
      if (withStats) this.#statsAt = sentAt;
      if (this.#capacityDue === capacity) this.#capacityDue = null;
      for (const ack of acks) if (this.#acks.get(ack.opId) === ack) this.#acks.delete(ack.opId);
      // A control-plane replica that just started wants every instance: the next report, at once.
      if (answer.sendFull === true) this.#fullDue = true;
      if (typeof answer.jobUrl === 'string' && answer.jobUrl !== this.#jobUrl && /^https?:\/\//.test(answer.jobUrl)) {
        this.#jobUrl = answer.jobUrl;
        this.#deps.jobUrl?.(answer.jobUrl);
      }
      for (const refused of answer.refused ?? []) {
        if (this.#warnedRefused.has(refused.id)) continue;
        this.#warnedRefused.add(refused.id);
        logger.warn(
          { instance: refused.id, reason: refused.reason },
          'the control plane refuses this instance of the host',
        );
      }
    } catch (err) {
      // The changes it carried are in the full report that follows a failure.
      this.#fullDue = true;
      if (options.last) logger.warn({ server, reason: (err as Error).message }, 'the last report could not be sent');
      else this.#deps.failed(err, epoch, server);
    }
  }

  #hasNews(): boolean {
    return this.#changes.size > 0 || this.#acks.size > 0;
  }

  /** Waits `ms`, or until there is something to report (or the loop ends). */
  async #nap(ms: number): Promise<void> {
    if (ms <= 0) return;
    const wake = new AbortController();
    this.#wake = wake;
    if (this.#hasNews() || this.#deps.signal.aborted) return;
    await this.#deps.timers.sleep(ms, wake.signal);
    if (this.#wake === wake) this.#wake = null;
  }

  #nudge(): void {
    this.#wake?.abort();
  }

  /** Every instance: the runtime's live ones, then the kept ones. */
  #fullItems(statuses: InstanceStatus[]): InstanceReport[] {
    const listed = new Set(statuses.map((s) => s.id));
    const items = statuses.flatMap((s) => this.#itemOf(s));
    for (const id of this.#deps.kept) if (!listed.has(id)) items.push(...this.#keptItemOf(id));
    return items;
  }

  /** The instances that changed, as they are now: kept ones as kept, removed ones left out. */
  #changedItems(changes: ReadonlyMap<string, InstanceStatus | null>): InstanceReport[] {
    return [...changes].flatMap(([id, status]) =>
      this.#deps.kept.has(id) ? this.#keptItemOf(id) : status ? this.#itemOf(status) : [],
    );
  }

  #itemOf({ stats: _stats, ...status }: InstanceStatus): InstanceReport[] {
    const owner = this.#deps.owners.get(status.id);
    if (owner) return [{ ...status, owner }];
    this.#deps.logger.warn({ instance: status.id }, 'an instance without an owner label is not reported');
    return [];
  }

  /** A stopped, kept instance: `exited` with no run of its own (the control plane reads only `kept`). */
  #keptItemOf(id: string): InstanceReport[] {
    const owner = this.#deps.owners.get(id);
    return owner ? [{ id, owner, state: 'exited', startedAt: null, exitCode: null, reason: null, kept: true }] : [];
  }
}
