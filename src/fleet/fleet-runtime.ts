/**
 * The runtime port over the fleet's agents (`runtime: fleet`, docs/fleet.md): every instance runs
 * on a host whose agent joined. This runtime runs nothing itself. It hands operations to the
 * host's queue and keeps the last word each host's agent sent about its instances.
 *
 * What it is given (the composition root wires these; the fleet service and the agent protocol
 * live elsewhere):
 * - `enqueue(hostId, op)`: the host's operation queue (stored, delivered by the agent's long poll,
 *   acknowledged once applied). Operations for one instance are enqueued one after the other, in
 *   the order of the calls here.
 * - `placements`: the control plane's records, to tell which host an instance id was placed on
 *   (pods by id → host, launched workers → their allocation's host; TERMINATED pods and dead
 *   workers count, their container may still be there) and, at server start, which instances are
 *   meant to run where.
 * - `cost` (optional, set with `useCost()` once the pod controller exists): pauses and resumes
 *   the usage intervals of a lost host's pods.
 * - `hosts` (optional): the fleet's hosts, for deleting a network volume on each host of its
 *   data center.
 * - `healthOf` (optional): an image's readiness probe, sent with each start (agents hold no images
 *   map), so an agent reports `running` only once it passes, as `runtime: docker` would.
 *
 * What feeds it, for each host, from the `/agent/v1/report` handler, one report at a time:
 * `applyAcks(hostId, acks)` first, then `applyReport(hostId, { full, items })` (`receive()` does
 * both in that order). What it expects of the agent: a report is built after the operations it
 * acknowledges, so its items already reflect them; an instance it stopped is reported `kept`; a
 * full report lists the kept instances too (`kept: true`). `applyReport` refuses ids this host may
 * not claim (report-screen.ts: an id the control plane never placed there) and answers them;
 * nothing of a refused item changes state. Acks of operations this runtime did not enqueue
 * (another replica's, a previous server's) are ignored.
 *
 * Several replicas (`journal`, fleet-journal.ts): every replica's runtime must know every instance.
 * A replica journals the operations it enqueues (`start`, `stop`, `remove`), and the wiring
 * journals the reports and acks of the agents talking to it; the others `replay()` those entries
 * in order, as if they had happened there. Entries of different replicas about one instance may
 * arrive in either order (an agent's report of an instance before the other replica's `start`
 * entry): an ack of an operation not known yet is remembered, and applied when its operation's
 * entry arrives.
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
import type { Logger } from 'pino';
import type { HealthProbe } from '../domain/image-spec.js';
import type { Clock } from '../domain/clock.js';
import type {
  AttachedInstance,
  InstanceListener,
  InstanceSpec,
  InstanceStats,
  InstanceStatus,
  OutputLine,
  OutputQuery,
  Runtime,
  ShellRequest,
  ShellSession,
} from '../runtime/runtime.js';
import type { FleetStreams } from './fleet-streams.js';
import { copyStatus, FleetInstances, hostAway, LIVE, type Tracked } from './fleet-instances.js';
import { LostHostCost, type FleetCost } from './lost-host-cost.js';
import type { JournalEntry } from './fleet-journal.js';
import { HostGoneError } from './operation-queue.js';
import type { InstanceReport, NewOperation, Operation, OperationAck, ReportRequest } from './protocol.js';
import { screenReport, type PlacedInstance, type Refusal, type Screened } from './report-screen.js';
import { hideHostPaths } from '../runtime/host-paths.js';
import { SharedOutput } from '../runtime/shared-output.js';

export type { FleetCost } from './lost-host-cost.js';
export type { PlacedInstance, Refusal } from './report-screen.js';

export interface FleetPlacements {
  /** Of `ids`, those the control plane placed on some host; ids it never placed are absent. */
  placed(ids: readonly string[]): Promise<ReadonlyMap<string, PlacedInstance>>;
  /** The instances meant to run (pods meant to run, launched workers not dead), for `attach()`. @default none */
  expected?(): Promise<Array<PlacedInstance & { id: string }>>;
}

export interface FleetRuntimeDeps {
  enqueue(hostId: string, operation: NewOperation): Promise<Operation>;
  placements: FleetPlacements;
  /** The fleet's hosts (the inventory's), for `removeVolume`. @default only the hosts known to have mounted the volume */
  hosts?: () => Iterable<{ id: string; dataCenterId: string }>;
  cost?: FleetCost;
  /**
   * The readiness probe of `image`, sent with its starts (the `start` operation's `health`): agents
   * hold no images map. The composition root passes the config's: `(image) => config.images[image]?.health`
   * (parseImages() builds that map without a prototype: an image name is tenant input).
   * @default none: instances are `running` once their container starts
   */
  healthOf?(image: string): HealthProbe | undefined;
  clock: Clock;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  config?: {
    /** How long a host may be unreachable before its pods' cost stops accruing. @default 300000 */
    lostGraceMs?: number;
    /** How often unreachable hosts are checked against the grace. @default 10000 (at most the grace) */
    sweepIntervalMs?: number;
  };
}

/** Longest reason kept from an agent (it may carry the tail of an instance's output). */
const MAX_REASON = 2_000;
/** Acks of operations not known yet (their replica's journal entry to come) remembered at most. */
const MAX_EARLY_ACKS = 5_000;

interface PendingOp {
  kind: Operation['kind'];
  hostId: string;
  instanceId: string | null;
  /** the start's instance: an ack about a start since replaced changes nothing */
  tracked: Tracked | null;
}

const clamp = (reason: string | null | undefined): string | null =>
  typeof reason === 'string' ? reason.slice(0, MAX_REASON) : null;

/**
 * An agent's reason as tenants read it: clamped, and without the host's paths (host-paths.ts).
 * An agent hides its own host's folders already; an older one does not, and this control plane
 * does not know a host's data root, so the engines' defaults and the id-named folders are hidden here.
 */
const forTenants = (reason: string | null | undefined): string | null => {
  const clamped = clamp(reason);
  return clamped === null ? null : hideHostPaths(clamped);
};

export class FleetRuntime implements Runtime {
  readonly name = 'fleet';
  readonly #deps: FleetRuntimeDeps;
  readonly #cost: LostHostCost;
  readonly #table = new FleetInstances();
  readonly #ops = new Map<string, PendingOp>();
  /** ids with a stop or remove not yet acknowledged, and how many */
  readonly #ending = new Map<string, number>();
  /** per instance, the last enqueue under way: the next waits for it */
  readonly #sending = new Map<string, Promise<unknown>>();
  /** network volumes, by id, and the hosts instances mounting them were started on */
  readonly #volumeHosts = new Map<string, Set<string>>();
  /** with a journal: acks of operations not known (yet), by operation id, oldest first */
  readonly #earlyAcks = new Map<string, { hostId: string; ack: OperationAck }>();
  /** where the operations enqueued here are told to the other replicas; null: one replica */
  #journal: { append(hostId: string, entry: JournalEntry): void } | null = null;
  #streams: Pick<FleetStreams, 'output' | 'shell'> | null = null;
  readonly #output = new SharedOutput((id, query) => this.#outputOnce(id, query));
  #closed = false;

  constructor(deps: FleetRuntimeDeps) {
    this.#deps = deps;
    this.#cost = new LostHostCost({
      clock: deps.clock,
      logger: deps.logger,
      ...(deps.cost ? { cost: deps.cost } : {}),
      ...(deps.config ? { config: deps.config } : {}),
    });
  }

  /** The cost hooks, when they exist only after the runtime (the pod controller is built over it). */
  useCost(cost: FleetCost): void {
    this.#cost.use(cost);
  }

  /** Where streams to the agents are opened (fleet-streams.ts): `output()` and `shell()` go through it. */
  useStreams(streams: Pick<FleetStreams, 'output' | 'shell'>): void {
    this.#streams = streams;
  }

  /** Several replicas share the database: the operations enqueued here go to the journal (fleet-journal.ts). */
  useJournal(journal: { append(hostId: string, entry: JournalEntry): void }): void {
    this.#journal = journal;
  }

  // --- the runtime port -----------------------------------------------------------------------

  async attach(): Promise<AttachedInstance[]> {
    for (const e of (await this.#deps.placements.expected?.()) ?? []) {
      const host = this.#table.host(e.hostId);
      // A host that reported in full already said what it runs.
      if (host.reported || this.#table.tracked.has(e.id)) continue;
      const reason = `host ${e.hostId} has not reported since the control plane started`;
      this.#table.track({
        id: e.id,
        hostId: e.hostId,
        owner: e.owner,
        starting: false,
        status: { id: e.id, state: 'unknown', startedAt: null, exitCode: null, reason, stats: null },
      });
    }
    return [
      ...[...this.#table.tracked.values()].map((t) => ({
        id: t.id,
        owner: t.owner,
        status: copyStatus(this.#table.visible(t)),
      })),
      ...[...this.#table.kept].map(([id, k]) => ({ id, owner: k.owner, status: null })),
    ];
  }

  async start(spec: InstanceSpec): Promise<InstanceStatus> {
    if (this.#closed) throw new Error(`cannot start instance "${spec.id}": the runtime is shutting down`);
    const revoked = this.#revoked(spec.hostId);
    if (revoked !== null) throw new Error(`cannot start instance "${spec.id}": ${revoked}`);
    const current = this.#table.tracked.get(spec.id);
    if (current && LIVE.has(current.status.state))
      throw new Error(
        `instance "${spec.id}" is already ${current.status.state} on host ${current.hostId}; stop it before starting it again`,
      );
    if (current) this.#table.untrack(current);
    this.#table.kept.delete(spec.id);
    const t: Tracked = {
      id: spec.id,
      hostId: spec.hostId,
      owner: spec.owner,
      starting: true,
      status: {
        id: spec.id,
        state: 'starting',
        startedAt: this.#deps.clock.now(),
        exitCode: null,
        reason: null,
        stats: null,
      },
    };
    this.#table.track(t);
    for (const v of spec.volumes) if (v.kind === 'network') this.#volumeHostsOf(v.volumeId).add(spec.hostId);
    this.#table.emit(this.#table.visible(t));
    let op: Operation;
    try {
      const health = this.#deps.healthOf?.(spec.image);
      op = await this.#send(spec.id, spec.hostId, {
        kind: 'start',
        instanceId: spec.id,
        spec,
        ...(health ? { health } : {}),
      });
    } catch (err) {
      if (this.#table.tracked.get(spec.id) === t) this.#table.untrack(t);
      throw new Error(
        `could not hand the start of instance "${spec.id}" to host ${spec.hostId}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    this.#ops.set(op.id, { kind: 'start', hostId: spec.hostId, instanceId: spec.id, tracked: t });
    const volumes = spec.volumes.flatMap((v) => (v.kind === 'network' ? [v.volumeId] : []));
    this.#journal?.append(spec.hostId, {
      t: 'start',
      opId: op.id,
      id: spec.id,
      owner: spec.owner,
      startedAt: t.status.startedAt!,
      volumes,
    });
    return copyStatus(t.status);
  }

  stop(id: string): Promise<void> {
    return this.#end('stop', id);
  }

  remove(id: string): Promise<void> {
    return this.#end('remove', id);
  }

  async removeVolume(volume: { kind: 'network'; volumeId: string; dataCenterId?: string }): Promise<void> {
    const targets = new Set(this.#volumeHosts.get(volume.volumeId));
    for (const h of this.#deps.hosts?.() ?? [])
      if (volume.dataCenterId === undefined || h.dataCenterId === volume.dataCenterId) targets.add(h.id);
    for (const hostId of targets) {
      // A revoked host is sent nothing more: its copy of the volume is out of reach.
      if (this.#revoked(hostId) !== null) continue;
      try {
        const op = await this.#send(null, hostId, { kind: 'removeVolume', volumeId: volume.volumeId });
        this.#ops.set(op.id, { kind: 'removeVolume', hostId, instanceId: null, tracked: null });
      } catch (err) {
        if (!(err instanceof HostGoneError)) throw err;
      }
    }
    this.#volumeHosts.delete(volume.volumeId);
  }

  async inspect(id: string): Promise<InstanceStatus | null> {
    const t = this.#table.tracked.get(id);
    return t ? copyStatus(this.#table.visible(t)) : null;
  }

  async list(): Promise<InstanceStatus[]> {
    return [...this.#table.tracked.values()].map((t) => copyStatus(this.#table.visible(t)));
  }

  /**
   * The instance's output, read on its host by its agent (a stopped instance's too, while its
   * container is kept). Its followers on this replica share one stream from the agent (shared-output.ts).
   */
  output(id: string, query: OutputQuery): AsyncIterable<OutputLine> {
    return this.#output.read(id, query);
  }

  async *#outputOnce(id: string, query: OutputQuery): AsyncGenerator<OutputLine> {
    const hostId = await this.#hostOf(id);
    if (hostId === null || !this.#streams) return;
    const host = this.#table.knownHost(hostId);
    // Said at once rather than after the stream's connect timeout: nobody would dial back.
    const away = hostAway(host);
    if (away !== null)
      throw new Error(
        host!.revokedAt !== null
          ? `${away}: its output is out of reach`
          : `${away}: the output stays on the host until its agent is back`,
      );
    yield* this.#streams.output(hostId, id, query);
  }

  async shell(id: string, request: ShellRequest): Promise<ShellSession> {
    const t = this.#table.tracked.get(id);
    const visible = t ? this.#table.visible(t) : null;
    if (!t || visible?.state !== 'running')
      throw new Error(`instance "${id}" is not running${visible?.reason ? ` (${visible.reason})` : ''}`);
    if (!this.#streams) throw new Error('this control plane opens no streams to its agents');
    return this.#streams.shell(t.hostId, id, request);
  }

  /**
   * The utilisation the host's agent sampled, for the instances this runtime has on that host (a
   * host's figures for another host's instance are ignored). Not a state change: nobody is told.
   */
  applyStats(hostId: string, stats: Readonly<Record<string, InstanceStats>>): void {
    for (const [id, s] of Object.entries(stats)) {
      const t = this.#table.tracked.get(id);
      if (t?.hostId === hostId && LIVE.has(t.status.state)) t.status = { ...t.status, stats: { ...s } };
    }
  }

  onChange(listener: InstanceListener): () => void {
    return this.#table.onChange(listener);
  }

  /** Detaches: the instances run on on their hosts; reports are no longer applied. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#output.close();
    await this.#cost.close();
  }

  unavailable(hostId?: string): string | null {
    return hostAway(hostId === undefined ? undefined : this.#table.knownHost(hostId));
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
    return this.#table.onHost(hostId, async () => this.#applyAcks(hostId, acks));
  }

  #applyAcks(hostId: string, acks: readonly OperationAck[]): void {
    if (this.#closed) return;
    for (const ack of acks) {
      const op = this.#ops.get(ack.opId);
      if (!op && this.#journal) this.#rememberEarly(hostId, ack);
      // Only the host an operation was for may acknowledge it.
      if (!op || op.hostId !== hostId) continue;
      this.#ops.delete(ack.opId);
      if (op.kind === 'start') {
        const t = op.tracked;
        if (!t || this.#table.tracked.get(t.id) !== t) continue;
        t.starting = false;
        if (!ack.ok && LIVE.has(t.status.state)) {
          this.#deps.logger.warn(
            { hostId, instanceId: t.id, error: clamp(ack.error) },
            'a host could not start an instance',
          );
          this.#table.update(t, {
            ...t.status,
            state: 'failed',
            exitCode: null,
            reason: forTenants(ack.error) ?? `host ${hostId} could not start it`,
          });
        }
        continue;
      }
      if (op.instanceId !== null) this.#ended(op.instanceId);
      if (!ack.ok)
        this.#deps.logger.warn(
          { hostId, op: op.kind, instanceId: op.instanceId, error: clamp(ack.error) },
          'a host could not apply an operation',
        );
    }
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
    return this.#table.onHost(hostId, async () => {
      // A revoked host's word no longer counts (a report sent before its revocation, replayed late).
      if (this.#closed || this.#revoked(hostId) !== null) return [];
      const { refused, accepted, placed } = options.screened
        ? await this.#owners(report.items)
        : await this.#screen(hostId, report.items);
      const host = this.#table.host(hostId);
      const seen = new Set<string>();
      for (const item of report.items) {
        if (!accepted.has(item.id)) continue;
        seen.add(item.id);
        this.#applyItem(hostId, item, placed);
      }
      if (report.full) {
        for (const id of [...host.instances]) {
          const t = this.#table.tracked.get(id)!;
          if (seen.has(id) || t.starting || !LIVE.has(t.status.state)) continue;
          this.#table.update(t, {
            ...t.status,
            state: 'exited',
            exitCode: null,
            reason: `its container is gone from host ${hostId}`,
          });
        }
        for (const [id, k] of this.#table.kept) if (k.hostId === hostId && !seen.has(id)) this.#table.kept.delete(id);
        host.reported = true;
      }
      await this.#cost.reported(hostId, () =>
        [...host.instances]
          .map((id) => this.#table.tracked.get(id)!)
          .flatMap((t) => (t.owner.kind === 'pod' && t.status.state === 'running' ? [t.id] : [])),
      );
      return refused;
    });
  }

  /**
   * What another replica journaled (fleet-journal.ts), applied as if it had happened here: its
   * operations (tracked as its `start()` and `stop()` would have, nothing enqueued), the acks and
   * reports of the agents talking to it (already screened there).
   */
  replay(hostId: string, entry: JournalEntry): Promise<unknown> {
    switch (entry.t) {
      case 'acks':
        return this.applyAcks(hostId, entry.acks);
      case 'report':
        return this.applyReport(hostId, entry, { screened: true });
      case 'start':
      case 'end':
        return this.#table.onHost(hostId, async () => {
          if (this.#closed) return;
          if (entry.t === 'start') this.#replayStart(hostId, entry);
          else this.#replayEnd(hostId, entry);
          const early = this.#earlyAcks.get(entry.opId);
          if (early) {
            this.#earlyAcks.delete(entry.opId);
            this.#applyAcks(early.hostId, [early.ack]);
          }
        });
      default:
        return entry satisfies never;
    }
  }

  #replayStart(hostId: string, e: Extract<JournalEntry, { t: 'start' }>): void {
    for (const volumeId of e.volumes) this.#volumeHostsOf(volumeId).add(hostId);
    const current = this.#table.tracked.get(e.id);
    // The agent's report of it came first (adopted): that is this start's instance.
    if (current && current.hostId === hostId && LIVE.has(current.status.state)) {
      current.starting = true;
      this.#ops.set(e.opId, { kind: 'start', hostId, instanceId: e.id, tracked: current });
      return;
    }
    if (current) this.#table.untrack(current);
    this.#table.kept.delete(e.id);
    const t: Tracked = {
      id: e.id,
      hostId,
      owner: e.owner,
      starting: true,
      status: { id: e.id, state: 'starting', startedAt: e.startedAt, exitCode: null, reason: null, stats: null },
    };
    this.#table.track(t);
    this.#ops.set(e.opId, { kind: 'start', hostId, instanceId: e.id, tracked: t });
    this.#table.emit(this.#table.visible(t));
  }

  #replayEnd(hostId: string, e: Extract<JournalEntry, { t: 'end' }>): void {
    const t = this.#table.tracked.get(e.id);
    if (t) this.#table.untrack(t);
    if (e.kind === 'remove') this.#table.kept.delete(e.id);
    else if (t) this.#table.kept.set(e.id, { hostId: t.hostId, owner: t.owner });
    this.#ending.set(e.id, (this.#ending.get(e.id) ?? 0) + 1);
    this.#ops.set(e.opId, { kind: e.kind, hostId, instanceId: e.id, tracked: null });
  }

  #rememberEarly(hostId: string, ack: OperationAck): void {
    this.#earlyAcks.set(ack.opId, { hostId, ack });
    if (this.#earlyAcks.size > MAX_EARLY_ACKS) this.#earlyAcks.delete(this.#earlyAcks.keys().next().value!);
  }

  /** Of the ids a host reports, those it may not claim (never placed there by the control plane), with why. */
  async refusals(hostId: string, ids: readonly string[]): Promise<Refusal[]> {
    return (
      await this.#screen(
        hostId,
        ids.map((id) => ({ id })),
      )
    ).refused;
  }

  // --- hosts that come and go -------------------------------------------------------------------

  /** The host missed its heartbeats at `sinceMs`: its live instances read `unknown`. */
  hostUnavailable(hostId: string, sinceMs: number): void {
    const host = this.#table.host(hostId);
    if (host.revokedAt !== null || (host.downSince !== null && host.downSince <= sinceMs)) return;
    this.#table.changeHost(host, () => {
      host.downSince = sinceMs;
    });
    this.#cost.lost(hostId, sinceMs);
  }

  /** The host reports again: its instances read as last reported (its next report, full, settles them). */
  hostAvailable(hostId: string): void {
    const host = this.#table.knownHost(hostId);
    if (!host || host.downSince === null || host.revokedAt !== null) return;
    this.#table.changeHost(host, () => {
      host.downSince = null;
    });
    this.#cost.back(hostId);
  }

  /**
   * The host was revoked at `at`: its live instances read `exited` (listeners hear it: their pods
   * end, their workers are stopped), its kept containers are forgotten, and nothing more is sent to
   * it. For good: nothing it said before, replayed late, changes that.
   */
  hostRevoked(hostId: string, at: number): void {
    const host = this.#table.host(hostId);
    if (host.revokedAt !== null) return;
    this.#table.changeHost(host, () => {
      host.revokedAt = at;
    });
    for (const [id, k] of this.#table.kept) if (k.hostId === hostId) this.#table.kept.delete(id);
    // Its pods end now (their usage closes with them): no lost grace to wait for.
    this.#cost.forget(hostId);
  }

  /** Pauses the cost of the pods of hosts unreachable for the lost grace at `now` (lost-host-cost.ts). On a timer; tests call it. */
  sweep(now: number = this.#deps.clock.now()): Promise<void> {
    return this.#cost.sweep(now);
  }

  // --- bookkeeping ------------------------------------------------------------------------------

  #screen(hostId: string, items: ReadonlyArray<Pick<InstanceReport, 'id'> & Partial<Pick<InstanceReport, 'state'>>>) {
    return screenReport(
      hostId,
      items,
      (id) => (this.#table.tracked.get(id) ?? this.#table.kept.get(id))?.hostId,
      (ids) => this.#deps.placements.placed(ids),
    );
  }

  /** Items screened already (by the fleet service, or the replica that journaled them): only the owners of instances not tracked are looked up. */
  async #owners(items: readonly InstanceReport[]): Promise<Pick<Screened, 'refused' | 'accepted' | 'placed'>> {
    const unknown = items.flatMap((i) => (this.#table.tracked.has(i.id) || this.#table.kept.has(i.id) ? [] : [i.id]));
    return {
      refused: [],
      accepted: new Set(items.map((i) => i.id)),
      placed: unknown.length > 0 ? await this.#deps.placements.placed(unknown) : new Map(),
    };
  }

  #applyItem(hostId: string, item: InstanceReport, placed: ReadonlyMap<string, PlacedInstance>): void {
    // What the host says of an instance being stopped describes what it is stopping.
    if (this.#ending.has(item.id)) return;
    const t = this.#table.tracked.get(item.id);
    if (item.kept) {
      if (t && !t.starting && LIVE.has(t.status.state))
        this.#table.update(t, {
          ...t.status,
          state: 'exited',
          exitCode: null,
          reason: `its container on host ${hostId} was stopped`,
        });
      else if (!t) {
        const owner = this.#table.kept.get(item.id)?.owner ?? placed.get(item.id)?.owner;
        if (owner) this.#table.kept.set(item.id, { hostId, owner });
      }
      return;
    }
    const status: InstanceStatus = {
      id: item.id,
      state: item.state,
      startedAt: typeof item.startedAt === 'number' ? item.startedAt : null,
      exitCode: typeof item.exitCode === 'number' ? item.exitCode : null,
      reason: forTenants(item.reason),
      stats: null,
    };
    if (t) {
      // The figures of the last sample stand until the next (they come with heartbeats, not changes).
      this.#table.update(t, LIVE.has(status.state) ? { ...status, stats: t.status.stats } : status);
      return;
    }
    // Not started by this runtime: adopted (a server restart, another replica's start), owned as the records say.
    const owner = this.#table.kept.get(item.id)?.owner ?? placed.get(item.id)?.owner;
    if (!owner) return;
    this.#table.kept.delete(item.id);
    const adopted: Tracked = { id: item.id, hostId, owner, starting: false, status };
    this.#table.track(adopted);
    this.#table.emit(this.#table.visible(adopted));
  }

  async #end(kind: 'stop' | 'remove', id: string): Promise<void> {
    const t = this.#table.tracked.get(id);
    let hostId = t?.hostId ?? this.#table.kept.get(id)?.hostId;
    if (t) this.#table.untrack(t);
    if (kind === 'remove') this.#table.kept.delete(id);
    else if (t) this.#table.kept.set(id, { hostId: t.hostId, owner: t.owner });
    hostId ??= (await this.#deps.placements.placed([id])).get(id)?.hostId;
    if (hostId === undefined) return;
    // Nothing more goes to a revoked host: what it ran is out of reach, so there is nothing to wait for.
    if (this.#revoked(hostId) !== null) {
      this.#table.kept.delete(id);
      return;
    }
    this.#ending.set(id, (this.#ending.get(id) ?? 0) + 1);
    try {
      const op = await this.#send(id, hostId, { kind, instanceId: id });
      this.#ops.set(op.id, { kind, hostId, instanceId: id, tracked: null });
      this.#journal?.append(hostId, { t: 'end', opId: op.id, kind, id });
    } catch (err) {
      this.#ended(id);
      // Revoked meanwhile (from the CLI, before this replica heard of it): the same as above.
      if (err instanceof HostGoneError) {
        this.#table.kept.delete(id);
        this.#deps.logger.info({ hostId, instanceId: id, op: kind }, 'nothing sent: the host is revoked');
        return;
      }
      throw new Error(`could not hand the ${kind} of instance "${id}" to host ${hostId}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  #ended(id: string): void {
    const n = (this.#ending.get(id) ?? 1) - 1;
    if (n > 0) this.#ending.set(id, n);
    else this.#ending.delete(id);
  }

  /** Enqueues after the instance's previous operation was enqueued, so one instance's operations keep their order. */
  #send(instanceId: string | null, hostId: string, op: NewOperation): Promise<Operation> {
    if (instanceId === null) return this.#deps.enqueue(hostId, op);
    const previous = this.#sending.get(instanceId) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.#deps.enqueue(hostId, op));
    this.#sending.set(instanceId, next);
    next
      .finally(() => {
        if (this.#sending.get(instanceId) === next) this.#sending.delete(instanceId);
      })
      .catch(() => undefined);
    return next;
  }

  /** Runs `fn` after the host's previous report (a lookup in one must not let a later one overtake it). */
  async #hostOf(id: string): Promise<string | null> {
    const known = this.#table.hostIdOf(id);
    if (known !== undefined) return known;
    return (await this.#deps.placements.placed([id])).get(id)?.hostId ?? null;
  }

  /** Why nothing is sent to the host any more (it was revoked), or null. */
  #revoked(hostId: string): string | null {
    const host = this.#table.knownHost(hostId);
    return host?.revokedAt != null ? hostAway(host) : null;
  }

  #volumeHostsOf(volumeId: string): Set<string> {
    let hosts = this.#volumeHosts.get(volumeId);
    if (!hosts) this.#volumeHosts.set(volumeId, (hosts = new Set()));
    return hosts;
  }
}
