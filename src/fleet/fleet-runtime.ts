/**
 * The runtime port over the fleet's agents (`runtime: fleet`, docs/fleet.md): every instance runs
 * on a host whose agent joined. This runtime runs nothing itself. It hands operations to the
 * host's queue and keeps the last word each host's agent sent about its instances.
 *
 * What it is given: fleet-runtime-deps.ts. What feeds it, and how several replicas share what it
 * knows: fleet-ledger.ts.
 *
 * States:
 * - `start()` answers `starting` at once; the agent's reports move the instance on. A start that
 *   fails on the host arrives as an ack with `ok: false` (the instance becomes `failed` with the
 *   agent's error as the reason) and/or a report in state `failed`.
 * - `stop()`/`remove()` forget the instance at once; reports about it are ignored until the agent
 *   acknowledged the operation (they describe what it is stopping).
 * - A full report is the whole truth: a live instance of the host missing from it (and not being
 *   started) is `exited`, "its container is gone from host X".
 * - `hostUnavailable(hostId, since)` (the fleet service saw no heartbeat in time): its live
 *   instances read `unknown`, "host X unreachable since <time>", and `unavailable(hostId)` says so,
 *   until `hostAvailable(hostId)`. After `lostGraceMs` unreachable its pods' cost stops, and the
 *   first report once it is back starts it again (lost-host-cost.ts). A `stop` or `remove` waits in
 *   the host's queue until its agent is back.
 * - `hostRevoked(hostId, at)`: the host never reports again. Its live instances read `exited`,
 *   "host X was revoked at <time>", `unavailable(hostId)` says so for good, and nothing more is
 *   sent to it: a `stop` or `remove` of its instances is done at once (there is no queue to wait
 *   in), a `start` there is refused. Its containers, if the machine runs on, are out of reach; if
 *   it joins again as a new host with the same agent data dir, its agent reports them and they are
 *   removed as orphans (no record places them on the new host).
 *
 * Server start (`attach()` is called before the server listens, so no agent has reported yet): it
 * answers, as `unknown` ("host X has not reported since the control plane started"), the instances
 * the records say are meant to run, plus whatever was reported already. The services adopt them as
 * they are (their pods keep their status, nothing is restarted); each host's first full report
 * (within a heartbeat of its agent reconnecting) confirms them or marks the missing ones `exited`.
 * The first report of each host after the start also resumes the usage of its running pods whose
 * interval a lost grace had closed.
 */
import type {
  AttachedInstance,
  InstanceListener,
  InstanceSpec,
  InstanceStats,
  InstanceStatus,
} from '../runtime/runtime.js';
import type { OutputLine, OutputQuery, Runtime, ShellRequest, ShellSession, StopOptions } from '../runtime/runtime.js';
import type { ImagePreparation } from '../runtime/runtime.js';
import type { Duplex } from 'node:stream';
import type { FleetStreams } from './fleet-streams.js';
import type { FleetTunnels } from './fleet-tunnels.js';
import { AgentReach } from './agent-reach.js';
import { copyStatus, FleetInstances, hostAway, LIVE, type Tracked } from './fleet-instances.js';
import { applyAcks, applyReport, applyStats, attached, hostAvailable, hostRevoked } from './fleet-ledger.js';
import {
  hostUnavailable,
  ended,
  replay,
  whyRevoked,
  refusals,
  volumeHostsOf,
  type FleetLedger,
} from './fleet-ledger.js';
import type { FleetRuntimeDeps } from './fleet-runtime-deps.js';
import { LostHostCost, type FleetCost } from './lost-host-cost.js';
import type { JournalEntry } from './fleet-journal.js';
import { HostGoneError } from './operation-queue.js';
import type { InstanceReport, NewOperation, Operation, OperationAck, ReportRequest } from './protocol.js';
import type { Refusal } from './report-screen.js';
import { SharedOutput } from '../runtime/shared-output.js';
import { FleetSuspension } from './fleet-suspend.js';
import { FleetImages } from './fleet-images.js';

export type { FleetCost } from './lost-host-cost.js';
export type { PlacedInstance, Refusal } from './report-screen.js';
export type { FleetPlacements } from './fleet-runtime-deps.js';

export class FleetRuntime implements Runtime {
  readonly name = 'fleet';
  readonly #ledger: FleetLedger;
  /** per instance, the last enqueue under way: the next waits for it */
  readonly #sending = new Map<string, Promise<unknown>>();
  readonly #reach: AgentReach;
  readonly #output: SharedOutput;
  readonly #suspension: FleetSuspension;
  readonly #images: FleetImages;

  constructor(deps: FleetRuntimeDeps) {
    this.#ledger = {
      deps,
      cost: new LostHostCost({
        clock: deps.clock,
        logger: deps.logger,
        ...(deps.cost ? { cost: deps.cost } : {}),
        ...(deps.config ? { config: deps.config } : {}),
      }),
      table: new FleetInstances(),
      ops: new Map(),
      ending: new Map(),
      volumeHosts: new Map(),
      earlyAcks: new Map(),
      journal: null,
      closed: false,
    };
    this.#reach = new AgentReach(this.#ledger);
    this.#output = new SharedOutput((id, query) => this.#reach.output(id, query));
    this.#suspension = new FleetSuspension(this.#ledger, (id, hostId, op) => this.#send(id, hostId, op));
    this.#images = new FleetImages(this.#ledger, (hostId, op) => this.#send(null, hostId, op));
  }

  /** The cost hooks, when they exist only after the runtime (the pod controller is built over it). */
  useCost(cost: FleetCost): void {
    this.#ledger.cost.use(cost);
  }

  /** Where streams to the agents are opened (fleet-streams.ts): `output()` and `shell()` go through it. */
  useStreams(streams: Pick<FleetStreams, 'output' | 'shell'>): void {
    this.#reach.streams = streams;
  }

  /** Where the agents' tunnels are kept (fleet-tunnels.ts): `connect()` goes through them. */
  useTunnels(tunnels: Pick<FleetTunnels, 'connect' | 'close'>): void {
    this.#reach.tunnels = tunnels;
  }

  /** Several replicas share the database: the operations enqueued here go to the journal (fleet-journal.ts). */
  useJournal(journal: { append(hostId: string, entry: JournalEntry): void }): void {
    this.#ledger.journal = journal;
  }

  // --- the runtime port -----------------------------------------------------------------------

  async attach(): Promise<AttachedInstance[]> {
    return attached(this.#ledger);
  }

  async start(spec: InstanceSpec): Promise<InstanceStatus> {
    if (this.#ledger.closed) throw new Error(`cannot start instance "${spec.id}": the runtime is shutting down`);
    const revoked = whyRevoked(this.#ledger, spec.hostId);
    if (revoked !== null) throw new Error(`cannot start instance "${spec.id}": ${revoked}`);
    const current = this.#ledger.table.tracked.get(spec.id);
    if (current && LIVE.has(current.status.state))
      throw new Error(
        `instance "${spec.id}" is already ${current.status.state} on host ${current.hostId}; stop it before starting it again`,
      );
    if (current) this.#ledger.table.untrack(current);
    this.#ledger.table.kept.delete(spec.id);
    const t: Tracked = {
      id: spec.id,
      hostId: spec.hostId,
      owner: spec.owner,
      starting: true,
      status: {
        id: spec.id,
        state: 'starting',
        startedAt: this.#ledger.deps.clock.now(),
        exitCode: null,
        reason: null,
        stats: null,
      },
    };
    this.#ledger.table.track(t);
    for (const v of spec.volumes) if (v.kind === 'network') volumeHostsOf(this.#ledger, v.volumeId).add(spec.hostId);
    this.#ledger.table.emit(this.#ledger.table.visible(t));
    let op: Operation;
    try {
      const health = this.#ledger.deps.healthOf?.(spec.image);
      op = await this.#send(spec.id, spec.hostId, {
        kind: 'start',
        instanceId: spec.id,
        spec,
        ...(health ? { health } : {}),
      });
    } catch (err) {
      if (this.#ledger.table.tracked.get(spec.id) === t) this.#ledger.table.untrack(t);
      throw new Error(
        `could not hand the start of instance "${spec.id}" to host ${spec.hostId}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    this.#ledger.ops.set(op.id, { kind: 'start', hostId: spec.hostId, instanceId: spec.id, tracked: t });
    const volumes = spec.volumes.flatMap((v) => (v.kind === 'network' ? [v.volumeId] : []));
    this.#ledger.journal?.append(spec.hostId, {
      t: 'start',
      opId: op.id,
      id: spec.id,
      owner: spec.owner,
      startedAt: t.status.startedAt!,
      volumes,
    });
    return copyStatus(t.status);
  }

  stop(id: string, options: StopOptions = {}): Promise<void> {
    return this.#end('stop', id, options.discard === true);
  }

  remove(id: string): Promise<void> {
    return this.#end('remove', id);
  }

  async removeVolume(volume: { kind: 'network'; volumeId: string; dataCenterId?: string }): Promise<void> {
    const targets = new Set(this.#ledger.volumeHosts.get(volume.volumeId));
    for (const h of this.#ledger.deps.hosts?.() ?? [])
      if (volume.dataCenterId === undefined || h.dataCenterId === volume.dataCenterId) targets.add(h.id);
    for (const hostId of targets) {
      // A revoked host is sent nothing more: its copy of the volume is out of reach.
      if (whyRevoked(this.#ledger, hostId) !== null) continue;
      try {
        const op = await this.#send(null, hostId, { kind: 'removeVolume', volumeId: volume.volumeId });
        this.#ledger.ops.set(op.id, { kind: 'removeVolume', hostId, instanceId: null, tracked: null });
      } catch (err) {
        if (!(err instanceof HostGoneError)) throw err;
      }
    }
    this.#ledger.volumeHosts.delete(volume.volumeId);
  }

  async inspect(id: string): Promise<InstanceStatus | null> {
    const t = this.#ledger.table.tracked.get(id);
    return t ? copyStatus(this.#ledger.table.visible(t)) : null;
  }

  async list(): Promise<InstanceStatus[]> {
    return [...this.#ledger.table.tracked.values()].map((t) => copyStatus(this.#ledger.table.visible(t)));
  }

  /**
   * The instance's output, read on its host by its agent (a stopped instance's too, while its
   * container is kept). Its followers on this replica share one stream from the agent (shared-output.ts).
   */
  output(id: string, query: OutputQuery): AsyncIterable<OutputLine> {
    return this.#output.read(id, query);
  }

  shell(id: string, request: ShellRequest): Promise<ShellSession> {
    return this.#reach.shell(id, request);
  }

  /** A connection to `port` of the instance, through its host's tunnel (its agent dials the container). */
  connect(id: string, port: number, options: { timeoutMs: number }): Promise<Duplex> {
    return this.#reach.connect(id, port, options.timeoutMs);
  }

  /** Through the instance's host's agent, resolved on its ack (fleet-suspend.ts). */
  suspend = (id: string): Promise<void> => this.#suspension.apply('suspend', id);
  resume = (id: string): Promise<void> => this.#suspension.apply('resume', id);
  /** False for a host whose agent refused suspend as an unknown operation (until it reports in full again). */
  canSuspend = (hostId: string): boolean => this.#suspension.canSuspend(hostId);
  /** FlashBoot's pre-pulled images, through the host's agent, resolved on its ack (fleet-images.ts). */
  prepareImage = (hostId: string, r: ImagePreparation) => this.#images.prepare(hostId, r);
  preparedImages = (hostId: string) => this.#images.list(hostId);
  discardImage = (hostId: string, image: string) => this.#images.discard(hostId, image);
  canPrepareImages = (hostId: string): boolean => this.#images.canPrepare(hostId);

  /**
   * The utilisation the host's agent sampled, for the instances this runtime has on that host (a
   * host's figures for another host's instance are ignored). Not a state change: nobody is told.
   */
  applyStats(hostId: string, stats: Readonly<Record<string, InstanceStats>>): void {
    applyStats(this.#ledger, hostId, stats);
  }

  onChange(listener: InstanceListener): () => void {
    return this.#ledger.table.onChange(listener);
  }

  /** Detaches: the instances run on on their hosts; reports are no longer applied. */
  async close(): Promise<void> {
    this.#ledger.closed = true;
    this.#output.close();
    this.#reach.tunnels?.close();
    await this.#ledger.cost.close();
  }

  unavailable(hostId?: string): string | null {
    return hostAway(hostId === undefined ? undefined : this.#ledger.table.knownHost(hostId));
  }

  // --- what the hosts say ---------------------------------------------------------------------

  /** One `/agent/v1/report` of the host: its acks, then its instances. Answers the refused ids. */
  receive(hostId: string, report: Pick<ReportRequest, 'instances' | 'acks'>): Promise<Refusal[]> {
    const acked = report.acks?.length ? this.applyAcks(hostId, report.acks) : null;
    if (report.instances) return this.applyReport(hostId, report.instances);
    return acked ? acked.then(() => []) : Promise.resolve([]);
  }

  /**
   * The host applied these operations (`ok`), or could not (`error` says why). Applied in turn with
   * the host's reports: after those received before, before those received after.
   */
  applyAcks(hostId: string, acks: readonly OperationAck[]): Promise<void> {
    return applyAcks(this.#ledger, hostId, acks);
  }

  /**
   * The host's instances as its agent reports them (`full`: all it has). Ids it may not claim are
   * answered and ignored; the rest update what is known, and listeners hear every change.
   */
  applyReport(
    hostId: string,
    report: { full: boolean; items: readonly InstanceReport[] },
    options: { screened?: boolean } = {},
  ): Promise<Refusal[]> {
    if (report.full) {
      this.#suspension.heardInFull(hostId);
      this.#images.heardInFull(hostId);
    }
    const applied = applyReport(this.#ledger, hostId, report, options);
    if (report.full) void applied.finally(() => this.#suspension.settled(hostId)).catch(() => {});
    return applied;
  }

  /**
   * What another replica journaled (fleet-journal.ts), applied as if it had happened here: its
   * operations (tracked as its `start()` and `stop()` would have, nothing enqueued), the acks and
   * reports of the agents talking to it (already screened there).
   */
  replay(hostId: string, entry: JournalEntry): Promise<unknown> {
    return replay(this.#ledger, hostId, entry);
  }

  /** Of the ids a host reports, those it may not claim (never placed there by the control plane), with why. */
  refusals(hostId: string, ids: readonly string[]): Promise<Refusal[]> {
    return refusals(this.#ledger, hostId, ids);
  }

  // --- hosts that come and go -------------------------------------------------------------------

  /** The host missed its heartbeats at `sinceMs`: its live instances read `unknown`. */
  hostUnavailable(hostId: string, sinceMs: number): void {
    hostUnavailable(this.#ledger, hostId, sinceMs);
    this.#suspension.settled(hostId);
  }

  /** The host reports again: its instances read as last reported (its next report, full, settles them). */
  hostAvailable(hostId: string): void {
    hostAvailable(this.#ledger, hostId);
  }

  /**
   * The host was revoked at `at`: its live instances read `exited` (listeners hear it: their pods
   * end, their workers are stopped), its kept containers are forgotten, and nothing more is sent to
   * it. For good: nothing it said before, replayed late, changes that.
   */
  hostRevoked(hostId: string, at: number): void {
    hostRevoked(this.#ledger, hostId, at);
  }

  /** Pauses the cost of the pods of hosts unreachable for the lost grace at `now` (lost-host-cost.ts). On a timer; tests call it. */
  sweep(now: number = this.#ledger.deps.clock.now()): Promise<void> {
    return this.#ledger.cost.sweep(now);
  }

  // --- bookkeeping ------------------------------------------------------------------------------

  async #end(kind: 'stop' | 'remove', id: string, discard = false): Promise<void> {
    const t = this.#ledger.table.tracked.get(id);
    let hostId = t?.hostId ?? this.#ledger.table.kept.get(id)?.hostId;
    if (t) this.#ledger.table.untrack(t);
    if (kind === 'remove') this.#ledger.table.kept.delete(id);
    else if (t) this.#ledger.table.kept.set(id, { hostId: t.hostId, owner: t.owner });
    hostId ??= (await this.#ledger.deps.placements.placed([id])).get(id)?.hostId;
    if (hostId === undefined) return;
    // Nothing more goes to a revoked host: what it ran is out of reach, so there is nothing to wait for.
    if (whyRevoked(this.#ledger, hostId) !== null) {
      this.#ledger.table.kept.delete(id);
      return;
    }
    this.#ledger.ending.set(id, (this.#ledger.ending.get(id) ?? 0) + 1);
    try {
      const op = await this.#send(id, hostId, { kind, instanceId: id, ...(discard ? { discard } : {}) });
      this.#ledger.ops.set(op.id, { kind, hostId, instanceId: id, tracked: null });
      this.#ledger.journal?.append(hostId, { t: 'end', opId: op.id, kind, id });
    } catch (err) {
      ended(this.#ledger, id);
      // Revoked meanwhile (from the CLI, before this replica heard of it): the same as above.
      if (err instanceof HostGoneError) {
        this.#ledger.table.kept.delete(id);
        this.#ledger.deps.logger.info({ hostId, instanceId: id, op: kind }, 'nothing sent: the host is revoked');
        return;
      }
      throw new Error(`could not hand the ${kind} of instance "${id}" to host ${hostId}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  /** Enqueues after the instance's previous operation was enqueued, so one instance's operations keep their order. */
  #send(instanceId: string | null, hostId: string, op: NewOperation): Promise<Operation> {
    if (instanceId === null) return this.#ledger.deps.enqueue(hostId, op);
    const previous = this.#sending.get(instanceId) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.#ledger.deps.enqueue(hostId, op));
    this.#sending.set(instanceId, next);
    next
      .finally(() => {
        if (this.#sending.get(instanceId) === next) this.#sending.delete(instanceId);
      })
      .catch(() => undefined);
    return next;
  }
}
