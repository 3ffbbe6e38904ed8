/**
 * What the fleet runtime knows and how what the hosts say changes it (fleet-runtime.ts holds it):
 * the agents' acks and reports, and the entries other replicas journaled, applied in turn per host.
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
 */
import { copyStatus, hostAway, LIVE, type FleetInstances, type Tracked } from './fleet-instances.js';
import type { FleetRuntimeDeps } from './fleet-runtime-deps.js';
import type { JournalEntry } from './fleet-journal.js';
import type { LostHostCost } from './lost-host-cost.js';
import type { InstanceReport, Operation, OperationAck } from './protocol.js';
import { screenReport, type PlacedInstance, type Refusal, type Screened } from './report-screen.js';
import type { AttachedInstance, InstanceStats, InstanceStatus } from '../runtime/runtime.js';
import { hideHostPaths } from '../runtime/host-paths.js';

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
  /** a caller waiting for its ack: a suspend or resume (fleet-suspend.ts), an image operation (fleet-images.ts) */
  settle?: (ack: OperationAck) => void;
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

/** The fleet runtime's state, shared by its port methods (fleet-runtime.ts) and what the hosts say (here). */
export interface FleetLedger {
  readonly deps: FleetRuntimeDeps;
  readonly cost: LostHostCost;
  readonly table: FleetInstances;
  readonly ops: Map<string, PendingOp>;
  /** ids with a stop or remove not yet acknowledged, and how many */
  readonly ending: Map<string, number>;
  /** network volumes, by id, and the hosts instances mounting them were started on */
  readonly volumeHosts: Map<string, Set<string>>;
  /** with a journal: acks of operations not known (yet), by operation id, oldest first */
  readonly earlyAcks: Map<string, { hostId: string; ack: OperationAck }>;
  /** where the operations enqueued here are told to the other replicas; null: one replica */
  journal: { append(hostId: string, entry: JournalEntry): void } | null;
  closed: boolean;
}

/**
 * The host applied these operations (`ok`), or could not (`error` says why). Applied in turn with
 * the host's reports: after those received before, before those received after.
 */
export function applyAcks(ledger: FleetLedger, hostId: string, acks: readonly OperationAck[]): Promise<void> {
  return ledger.table.onHost(hostId, async () => applyAcksNow(ledger, hostId, acks));
}

function applyAcksNow(ledger: FleetLedger, hostId: string, acks: readonly OperationAck[]): void {
  if (ledger.closed) return;
  for (const ack of acks) {
    const op = ledger.ops.get(ack.opId);
    if (!op && ledger.journal) rememberEarly(ledger, hostId, ack);
    // Only the host an operation was for may acknowledge it.
    if (!op || op.hostId !== hostId) continue;
    ledger.ops.delete(ack.opId);
    if (op.kind === 'start') {
      const t = op.tracked;
      if (!t || ledger.table.tracked.get(t.id) !== t) continue;
      t.starting = false;
      if (!ack.ok && LIVE.has(t.status.state)) {
        ledger.deps.logger.warn(
          { hostId, instanceId: t.id, error: clamp(ack.error) },
          'a host could not start an instance',
        );
        ledger.table.update(t, {
          ...t.status,
          state: 'failed',
          exitCode: null,
          reason: forTenants(ack.error) ?? `host ${hostId} could not start it`,
        });
      }
      continue;
    }
    if (op.settle) {
      op.settle(ack);
      continue;
    }
    if (op.instanceId !== null) ended(ledger, op.instanceId);
    if (!ack.ok)
      ledger.deps.logger.warn(
        { hostId, op: op.kind, instanceId: op.instanceId, error: clamp(ack.error) },
        'a host could not apply an operation',
      );
  }
}

/**
 * The host's instances as its agent reports them (`full`: all it has). Ids it may not claim are
 * answered and ignored; the rest update what is known, and listeners hear every change.
 */
export function applyReport(
  ledger: FleetLedger,
  hostId: string,
  report: { full: boolean; items: readonly InstanceReport[] },
  options: { screened?: boolean } = {},
): Promise<Refusal[]> {
  return ledger.table.onHost(hostId, async () => {
    // A revoked host's word no longer counts (a report sent before its revocation, replayed late).
    if (ledger.closed || whyRevoked(ledger, hostId) !== null) return [];
    const { refused, accepted, placed } = options.screened
      ? await owners(ledger, report.items)
      : await screen(ledger, hostId, report.items);
    const host = ledger.table.host(hostId);
    const seen = new Set<string>();
    for (const item of report.items) {
      if (!accepted.has(item.id)) continue;
      seen.add(item.id);
      applyItem(ledger, hostId, item, placed);
    }
    if (report.full) {
      for (const id of [...host.instances]) {
        const t = ledger.table.tracked.get(id)!;
        if (seen.has(id) || t.starting || !LIVE.has(t.status.state)) continue;
        ledger.table.update(t, {
          ...t.status,
          state: 'exited',
          exitCode: null,
          reason: `its container is gone from host ${hostId}`,
        });
      }
      for (const [id, k] of ledger.table.kept) if (k.hostId === hostId && !seen.has(id)) ledger.table.kept.delete(id);
      host.reported = true;
    }
    await ledger.cost.reported(hostId, () =>
      [...host.instances]
        .map((id) => ledger.table.tracked.get(id)!)
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
export function replay(ledger: FleetLedger, hostId: string, entry: JournalEntry): Promise<unknown> {
  switch (entry.t) {
    case 'acks':
      return applyAcks(ledger, hostId, entry.acks);
    case 'report':
      return applyReport(ledger, hostId, entry, { screened: true });
    case 'start':
    case 'end':
      return ledger.table.onHost(hostId, async () => {
        if (ledger.closed) return;
        if (entry.t === 'start') replayStart(ledger, hostId, entry);
        else replayEnd(ledger, hostId, entry);
        const early = ledger.earlyAcks.get(entry.opId);
        if (early) {
          ledger.earlyAcks.delete(entry.opId);
          applyAcksNow(ledger, early.hostId, [early.ack]);
        }
      });
    default:
      return entry satisfies never;
  }
}

function replayStart(ledger: FleetLedger, hostId: string, e: Extract<JournalEntry, { t: 'start' }>): void {
  for (const volumeId of e.volumes) volumeHostsOf(ledger, volumeId).add(hostId);
  const current = ledger.table.tracked.get(e.id);
  // The agent's report of it came first (adopted): that is this start's instance.
  if (current && current.hostId === hostId && LIVE.has(current.status.state)) {
    current.starting = true;
    ledger.ops.set(e.opId, { kind: 'start', hostId, instanceId: e.id, tracked: current });
    return;
  }
  if (current) ledger.table.untrack(current);
  ledger.table.kept.delete(e.id);
  const t: Tracked = {
    id: e.id,
    hostId,
    owner: e.owner,
    starting: true,
    status: { id: e.id, state: 'starting', startedAt: e.startedAt, exitCode: null, reason: null, stats: null },
  };
  ledger.table.track(t);
  ledger.ops.set(e.opId, { kind: 'start', hostId, instanceId: e.id, tracked: t });
  ledger.table.emit(ledger.table.visible(t));
}

function replayEnd(ledger: FleetLedger, hostId: string, e: Extract<JournalEntry, { t: 'end' }>): void {
  const t = ledger.table.tracked.get(e.id);
  if (t) ledger.table.untrack(t);
  if (e.kind === 'remove') ledger.table.kept.delete(e.id);
  else if (t) ledger.table.kept.set(e.id, { hostId: t.hostId, owner: t.owner });
  ledger.ending.set(e.id, (ledger.ending.get(e.id) ?? 0) + 1);
  ledger.ops.set(e.opId, { kind: e.kind, hostId, instanceId: e.id, tracked: null });
}

function rememberEarly(ledger: FleetLedger, hostId: string, ack: OperationAck): void {
  ledger.earlyAcks.set(ack.opId, { hostId, ack });
  if (ledger.earlyAcks.size > MAX_EARLY_ACKS) ledger.earlyAcks.delete(ledger.earlyAcks.keys().next().value!);
}

function screen(
  ledger: FleetLedger,
  hostId: string,
  items: ReadonlyArray<Pick<InstanceReport, 'id'> & Partial<Pick<InstanceReport, 'state'>>>,
) {
  return screenReport(
    hostId,
    items,
    (id) => (ledger.table.tracked.get(id) ?? ledger.table.kept.get(id))?.hostId,
    (ids) => ledger.deps.placements.placed(ids),
  );
}

/** Items screened already (by the fleet service, or the replica that journaled them): only the owners of instances not tracked are looked up. */
async function owners(
  ledger: FleetLedger,
  items: readonly InstanceReport[],
): Promise<Pick<Screened, 'refused' | 'accepted' | 'placed'>> {
  const unknown = items.flatMap((i) => (ledger.table.tracked.has(i.id) || ledger.table.kept.has(i.id) ? [] : [i.id]));
  return {
    refused: [],
    accepted: new Set(items.map((i) => i.id)),
    placed: unknown.length > 0 ? await ledger.deps.placements.placed(unknown) : new Map(),
  };
}

function applyItem(
  ledger: FleetLedger,
  hostId: string,
  item: InstanceReport,
  placed: ReadonlyMap<string, PlacedInstance>,
): void {
  // What the host says of an instance being stopped describes what it is stopping.
  if (ledger.ending.has(item.id)) return;
  const t = ledger.table.tracked.get(item.id);
  if (item.kept) {
    if (t && !t.starting && LIVE.has(t.status.state))
      ledger.table.update(t, {
        ...t.status,
        state: 'exited',
        exitCode: null,
        reason: `its container on host ${hostId} was stopped`,
      });
    else if (!t) {
      const owner = ledger.table.kept.get(item.id)?.owner ?? placed.get(item.id)?.owner;
      if (owner) ledger.table.kept.set(item.id, { hostId, owner });
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
    ledger.table.update(t, LIVE.has(status.state) ? { ...status, stats: t.status.stats } : status);
    return;
  }
  // Not started by this runtime: adopted (a server restart, another replica's start), owned as the records say.
  const owner = ledger.table.kept.get(item.id)?.owner ?? placed.get(item.id)?.owner;
  if (!owner) return;
  ledger.table.kept.delete(item.id);
  const adopted: Tracked = { id: item.id, hostId, owner, starting: false, status };
  ledger.table.track(adopted);
  ledger.table.emit(ledger.table.visible(adopted));
}

export function ended(ledger: FleetLedger, id: string): void {
  const n = (ledger.ending.get(id) ?? 1) - 1;
  if (n > 0) ledger.ending.set(id, n);
  else ledger.ending.delete(id);
}

/** Why nothing is sent to the host any more (it was revoked), or null. */
export function whyRevoked(ledger: FleetLedger, hostId: string): string | null {
  const host = ledger.table.knownHost(hostId);
  return host?.revokedAt != null ? hostAway(host) : null;
}

export function volumeHostsOf(ledger: FleetLedger, volumeId: string): Set<string> {
  let hosts = ledger.volumeHosts.get(volumeId);
  if (!hosts) ledger.volumeHosts.set(volumeId, (hosts = new Set()));
  return hosts;
}

/** The host missed its heartbeats at `sinceMs`: its live instances read `unknown`. */
export function hostUnavailable(ledger: FleetLedger, hostId: string, sinceMs: number): void {
  const host = ledger.table.host(hostId);
  if (host.revokedAt !== null || (host.downSince !== null && host.downSince <= sinceMs)) return;
  ledger.table.changeHost(host, () => {
    host.downSince = sinceMs;
  });
  ledger.cost.lost(hostId, sinceMs);
}

/** The host reports again: its instances read as last reported (its next report, full, settles them). */
export function hostAvailable(ledger: FleetLedger, hostId: string): void {
  const host = ledger.table.knownHost(hostId);
  if (!host || host.downSince === null || host.revokedAt !== null) return;
  ledger.table.changeHost(host, () => {
    host.downSince = null;
  });
  ledger.cost.back(hostId);
}

/**
 * The host was revoked at `at`: its live instances read `exited`, its kept containers are
 * forgotten, and its pods' cost is closed at once (no lost grace to wait for).
 */
export function hostRevoked(ledger: FleetLedger, hostId: string, at: number): void {
  const host = ledger.table.host(hostId);
  if (host.revokedAt !== null) return;
  ledger.table.changeHost(host, () => {
    host.revokedAt = at;
  });
  for (const [id, k] of ledger.table.kept) if (k.hostId === hostId) ledger.table.kept.delete(id);
  // Its pods end now (their usage closes with them): no lost grace to wait for.
  ledger.cost.forget(hostId);
}

/** What `FleetRuntime.attach()` answers: the instances meant to run, as `unknown` until their host reports, and those known already. */
export async function attached(ledger: FleetLedger): Promise<AttachedInstance[]> {
  for (const e of (await ledger.deps.placements.expected?.()) ?? []) {
    const host = ledger.table.host(e.hostId);
    // A host that reported in full already said what it runs.
    if (host.reported || ledger.table.tracked.has(e.id)) continue;
    const reason = `host ${e.hostId} has not reported since the control plane started`;
    ledger.table.track({
      id: e.id,
      hostId: e.hostId,
      owner: e.owner,
      starting: false,
      status: { id: e.id, state: 'unknown', startedAt: null, exitCode: null, reason, stats: null },
    });
  }
  return [
    ...[...ledger.table.tracked.values()].map((t) => ({
      id: t.id,
      owner: t.owner,
      status: copyStatus(ledger.table.visible(t)),
    })),
    ...[...ledger.table.kept].map(([id, k]) => ({ id, owner: k.owner, status: null })),
  ];
}

/** The utilisation the host's agent sampled, for the instances on that host (see FleetRuntime.applyStats). */
export function applyStats(ledger: FleetLedger, hostId: string, stats: Readonly<Record<string, InstanceStats>>): void {
  for (const [id, s] of Object.entries(stats)) {
    const t = ledger.table.tracked.get(id);
    if (t?.hostId === hostId && LIVE.has(t.status.state)) t.status = { ...t.status, stats: { ...s } };
  }
}

/** Of the ids a host reports, those it may not claim (never placed there by the control plane), with why. */
export async function refusals(ledger: FleetLedger, hostId: string, ids: readonly string[]): Promise<Refusal[]> {
  return (
    await screen(
      ledger,
      hostId,
      ids.map((id) => ({ id })),
    )
  ).refused;
}
