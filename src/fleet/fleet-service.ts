/**
 * The control plane's side of the agent protocol (docs/fleet.md): join tokens, joins, host
 * credentials, reports, each host's operations, revocation, the list of hosts. Transport-free:
 * the routes under `/agent/v1` (src/http/routes/agent.ts) and the CLI call it.
 *
 * Seams for the fleet runtime and the inventory:
 * - `on(event, listener)` (fleet-events.ts): `host:joined`, `host:capacity`, `host:revoked` (on
 *   every replica, through the notify relay), `host:seen` (each report or poll, on the replica
 *   the agent talks to), `instances` (what the agent reported, minus what the ownership check
 *   refused; on the agent's replica only), `acks` (operations acknowledged for the first time; on
 *   every replica).
 * - `ownership` (deps, or `setOwnership`): `(hostId, ids) => Map<id, reason>`, the reported
 *   instance ids this host may not claim (another host's pod, an id nobody placed). Refused ids
 *   are answered to the agent and left out of the `instances` event. Default: accept all.
 * - `enqueue(hostId, op)` → the operation with its id and seq; `acks` says when it is done.
 * - `list()` and `get(id)` (capacity, last sign of life, state), `lastSeen(id)` (this replica's
 *   memory) for availability, with `hostState` (host-state.ts); `inventoryHost` (host-capacity.ts)
 *   maps a host onto the inventory's `Host`.
 *
 * Heartbeats cost no write per report: each report or poll updates the host's entry in memory,
 * and every few seconds (5, or fewer with a short heartbeat timeout) the entries seen since are
 * written in one batched statement (and so are the hosts holding a long-poll open). Per host the service keeps one small entry (its credential
 * hash, revocation, last seen, open polls). Revocations made elsewhere reach this replica through
 * the relay at once, or through a one-query check every second (the CLI on SQLite).
 */
import type { Logger } from 'pino';
import type { AgentsConfig } from './agents-config.js';
import type { Catalog, Cloud } from '../domain/catalog.js';
import type { Clock } from '../domain/clock.js';
import { ApiError } from '../domain/errors.js';
import type { CancelSignal } from '../jobs/job-signals.js';
import type { SecretBox } from '../store/secret-box.js';
import { FleetEmitter, type FleetEvents, type FleetHost, type FleetListener } from './fleet-events.js';
import { sameCapacity, validateCapacity, validateReachability } from './host-capacity.js';
import { claimGpus, withGpuClaims } from './host-gpus.js';
import { HostPresence } from './host-presence.js';
import { hashSecret, looksLikeJoinToken, newHostCredential, newHostId } from './host-secrets.js';
import { hostState, type HostState } from './host-state.js';
import { createJoinToken, type CreatedJoinToken } from './join-tokens.js';
import type { HostStore, HostRecord } from './host-store.js';
import { ackedOperation, FLEET_OPS_TOPIC, OperationQueue } from './operation-queue.js';
import type { OperationStore } from './operation-store.js';
import type {
  JoinAnswer,
  JoinRequest,
  NewOperation,
  Operation,
  OperationAck,
  ReportAnswer,
  ReportRequest,
} from './protocol.js';

/** Which reported instance ids a host may not claim: id → why. */
export type OwnershipCheck = (hostId: string, ids: readonly string[], full: boolean) => Promise<Map<string, string>>;

/** Relay topics: host lifecycle (key `<joined|capacity|revoked>:<hostId>`), and acknowledged operations (key the operation id). */
export const FLEET_HOST_TOPIC = 'fleet-host';
const FLEET_ACK_TOPIC = 'fleet-ack';
export const FLEET_TOPICS: readonly string[] = [FLEET_OPS_TOPIC, FLEET_HOST_TOPIC, FLEET_ACK_TOPIC];

/** How often revocations made elsewhere are looked for, and the period of the other chores. */
const SYNC_INTERVAL_MS = 1000;
/**
 * Last-seen times are written every this many sync ticks at most: `gantry hosts list` and the other
 * replicas read them, and must not find a live host quiet. Fewer when the heartbeat timeout leaves
 * less room (`flushEveryTicks`).
 */
const MAX_FLUSH_EVERY_TICKS = 5;

/**
 * How many sync ticks between writes of the last-seen times: at most half the room the timeout
 * leaves over a heartbeat, so what the database says of a live host is never older than the timeout.
 */
export const flushEveryTicks = (config: { heartbeatMs: number; heartbeatTimeoutMs: number }): number =>
  Math.max(
    1,
    Math.min(
      MAX_FLUSH_EVERY_TICKS,
      Math.floor((config.heartbeatTimeoutMs - config.heartbeatMs) / 2 / SYNC_INTERVAL_MS),
    ),
  );
/** Acknowledged operations and spent or expired join tokens are pruned every this many ticks… */
const PRUNE_EVERY_TICKS = 60;
/** …once they are this old (acknowledged operations serve only to look into what happened). */
export const ACKED_RETENTION_MS = 3_600_000;
const SPENT_TOKEN_RETENTION_MS = 86_400_000;
/** A revocation written this long before the last check is still found (a slow transaction, another process's clock). */
const REVOCATION_MARGIN_MS = 300_000;

export interface FleetServiceDeps {
  /** The job API's URL workers are given: agents let their containers reach it through their firewall. */
  jobUrl?: () => string;
  hosts: HostStore;
  operations: OperationStore;
  clock: Clock;
  secrets: SecretBox;
  catalog: Catalog;
  config: AgentsConfig;
  /** Forwards wake-ups and host changes to the other replicas (PostgreSQL). */
  relay?: { publish(topic: string, key: string, count: number): void } | null;
  ownership?: OwnershipCheck;
  logger?: Pick<Logger, 'info' | 'warn'>;
}

/** A host as `list()` shows it. */
export interface HostListing extends FleetHost {
  /** the latest sign of life known here (this replica's memory, or the database's) */
  lastSeenAt: number | null;
  state: HostState;
}

const joinTokenInvalid = (): ApiError =>
  new ApiError(
    'JOIN_TOKEN_INVALID',
    'The join token is unknown, already used or expired. Create a new one on the control plane: gantry hosts token create.',
  );

const publicHost = ({ credentialHash: _hash, ...host }: HostRecord): FleetHost => host;

export class FleetService {
  readonly hosts: HostStore;
  readonly operations: OperationStore;
  readonly #deps: FleetServiceDeps;
  readonly #queue: OperationQueue;
  readonly #events: FleetEmitter;
  readonly #presence: HostPresence;
  /** Revocations already announced here. */
  readonly #revoked = new Set<string>();
  #ownership: OwnershipCheck;
  #revocationsCheckedAt: number;
  #timer: NodeJS.Timeout | null = null;
  #ticks = 0;
  #chore: Promise<void> | null = null;
  /** Relayed acknowledgements waiting to be read (next turn of the event loop). */
  #relayedAcks = new Set<string>();
  /** since when full reports are wanted from every host (a replica started), null: never */
  #fullWantedSince: number | null = null;
  /** per host, when this replica last heard (or asked for) a full report */
  readonly #fullHeardAt = new Map<string, number>();

  constructor(deps: FleetServiceDeps) {
    this.#deps = deps;
    this.hosts = deps.hosts;
    this.operations = deps.operations;
    this.#presence = new HostPresence(this.hosts, deps.clock);
    this.#ownership = deps.ownership ?? (async () => new Map());
    this.#events = new FleetEmitter((name, err) =>
      deps.logger?.warn({ event: name, err: (err as Error)?.message }, 'a fleet event listener failed'),
    );
    this.#queue = new OperationQueue({
      store: this.operations,
      secrets: deps.secrets,
      clock: deps.clock,
      publish: deps.relay?.publish.bind(deps.relay),
      onAcked: (hostId, acks) => {
        this.#events.emit('acks', { hostId, acks, relayed: false });
        for (const ack of acks) deps.relay?.publish(FLEET_ACK_TOPIC, ack.opId, 1);
      },
      logger: deps.logger,
    });
    this.#revocationsCheckedAt = deps.clock.now();
  }

  on<K extends keyof FleetEvents>(name: K, listener: FleetListener<K>): () => void {
    return this.#events.on(name, listener);
  }

  /** Sets the check of reported instance ids (the fleet runtime's records). */
  setOwnership(check: OwnershipCheck): void {
    this.#ownership = check;
  }

  /** Starts the chores: revocations made elsewhere, last-seen writes, prunes. */
  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.#tick(), SYNC_INTERVAL_MS);
    this.#timer.unref();
  }

  /** Ends every long-poll (with what it has), stops the chores, writes the last-seen times. */
  async close(): Promise<void> {
    this.#queue.close();
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#chore?.catch(() => undefined);
    await this.flush().catch((err: unknown) =>
      this.#deps.logger?.warn({ err: (err as Error).message }, "writing the hosts' last reports failed"),
    );
  }

  // ---- joining --------------------------------------------------------------------------------

  /** A new one-time join token (shown once; stored hashed). */
  async createJoinToken(
    options: { dataCenterId?: string | null; cloud?: Cloud; ttlMs?: number } = {},
  ): Promise<CreatedJoinToken> {
    return createJoinToken(this.hosts, this.#deps.catalog, this.#deps.clock.now(), {
      ttlMs: this.#deps.config.joinTokenTtlMs,
      ...options,
    });
  }

  /**
   * Joins a host with a one-time token: checks what it says it is (400 CAPACITY_INVALID naming
   * each field), spends the token (401 JOIN_TOKEN_INVALID, one message whether unknown, used or
   * expired) and records the host with its GPUs, all in one transaction: a refused join spends
   * nothing and stores nothing.
   */
  async join(request: JoinRequest): Promise<JoinAnswer> {
    const capacity = validateCapacity(request.capacity, this.#deps.catalog);
    validateReachability(request.publicIp, request.portRange);
    if (!looksLikeJoinToken(request.token)) throw joinTokenInvalid();
    const hostId = newHostId();
    const credential = newHostCredential(hostId);
    const now = this.#deps.clock.now();
    const host = await withGpuClaims(() =>
      this.hosts.withTransaction(async (tx) => {
        const place = await this.hosts.spendJoinToken(hashSecret(request.token), hostId, now, tx);
        if (!place) throw joinTokenInvalid();
        const record: HostRecord = {
          id: hostId,
          name: request.name,
          credentialHash: hashSecret(credential),
          dataCenterId: place.dataCenterId,
          cloud: place.cloud,
          publicIp: request.publicIp,
          portRange: [request.portRange[0], request.portRange[1]],
          capacity,
          agentVersion: request.agentVersion,
          joinedAt: now,
          lastReportAt: now,
          revokedAt: null,
        };
        await this.hosts.insertHost(record, tx);
        await claimGpus(this.hosts, hostId, capacity.gpus, tx);
        return record;
      }),
    );
    this.#presence.joined(hostId, host.credentialHash, now);
    this.#deps.logger?.info(
      { hostId, name: host.name, dataCenterId: host.dataCenterId, gpus: capacity.gpus.length },
      'a host joined',
    );
    this.#events.emit('host:joined', publicHost(host));
    this.#deps.relay?.publish(FLEET_HOST_TOPIC, `joined:${hostId}`, 1);
    const { heartbeatMs, pollWaitMs } = this.#deps.config;
    return { hostId, credential, dataCenterId: host.dataCenterId, cloud: host.cloud, heartbeatMs, pollWaitMs };
  }

  // ---- credentials ----------------------------------------------------------------------------

  /**
   * The host a credential belongs to. 401 UNAUTHORIZED for anything else (one message, whatever
   * was wrong); 401 HOST_REVOKED for a revoked host's true credential. With `unlessKnown`, only a
   * credential this replica knows is checked; any other gets that error (no database read).
   */
  async authenticate(credential: string, options: { unlessKnown?: Error | null } = {}): Promise<{ hostId: string }> {
    return { hostId: await this.#presence.authenticate(credential, options) };
  }

  /** Revokes a host: its credential stops working here at once, on other replicas through the relay. 404 when no live host has the id. */
  async revoke(hostId: string): Promise<FleetHost> {
    const host = await this.hosts.revokeHost(hostId, this.#deps.clock.now());
    if (!host)
      throw new ApiError('NOT_FOUND', `No live host with id "${hostId}" exists (unknown, or revoked already).`);
    this.#revokedHere(hostId, host.revokedAt!);
    this.#deps.relay?.publish(FLEET_HOST_TOPIC, `revoked:${hostId}`, 1);
    return publicHost(host);
  }

  #revokedHere(hostId: string, at: number): void {
    this.#presence.revoked(hostId, at);
    // its long-polls answer 401 HOST_REVOKED now rather than at their time out
    this.#queue.wake(hostId);
    if (this.#revoked.has(hostId)) return;
    this.#revoked.add(hostId);
    this.#deps.logger?.info({ hostId }, 'a host was revoked');
    this.#events.emit('host:revoked', { hostId, at });
  }

  // ---- reports --------------------------------------------------------------------------------

  /**
   * A report: a changed capacity (checked like a join's; a refused one refuses the whole report
   * and changes nothing), acknowledgements, instances. Every report is a heartbeat.
   */
  async report(hostId: string, report: ReportRequest): Promise<ReportAnswer> {
    const now = this.#seen(hostId);
    if (report.capacity !== undefined) await this.#updateCapacity(hostId, report.capacity);
    const { ignored } = report.acks && report.acks.length > 0 ? await this.ack(hostId, report.acks) : { ignored: [] };
    if (report.stats) this.#events.emit('stats', { hostId, stats: report.stats });
    const refused: ReportAnswer['refused'] = [];
    if (report.instances) {
      const { full, items } = report.instances;
      const refusals =
        items.length > 0 || full
          ? await this.#ownership(
              hostId,
              items.map((i) => i.id),
              full,
            )
          : new Map<string, string>();
      for (const [id, reason] of refusals) refused.push({ id, reason });
      const accepted = refusals.size > 0 ? items.filter((i) => !refusals.has(i.id)) : items;
      this.#events.emit('instances', { hostId, full, items: accepted });
    }
    const sendFull = this.#fullWanted(hostId, report.instances?.full === true, now);
    const jobUrl = this.#deps.jobUrl?.();
    return {
      now,
      refused,
      ignoredAcks: ignored,
      ...(sendFull ? { sendFull: true as const } : {}),
      ...(jobUrl ? { jobUrl } : {}),
    };
  }

  /**
   * Asks every host for a full report with its next report (answered `sendFull`), here and, through
   * the relay, on every replica: a replica that just started knows nothing the agents said before.
   */
  requestFullReports(): void {
    this.#fullWantedSince = this.#deps.clock.now();
    this.#deps.relay?.publish(FLEET_HOST_TOPIC, 'resync:*', 1);
  }

  /** Whether to ask this report's host for a full report (once per request for all). */
  #fullWanted(hostId: string, isFull: boolean, now: number): boolean {
    if (this.#fullWantedSince === null) return false;
    const heard = this.#fullHeardAt.get(hostId) ?? -Infinity;
    if (!isFull && heard >= this.#fullWantedSince) return false;
    this.#fullHeardAt.set(hostId, now);
    return !isFull;
  }

  async #updateCapacity(hostId: string, raw: unknown): Promise<void> {
    const capacity = validateCapacity(raw, this.#deps.catalog);
    const current = await this.hosts.getHost(hostId);
    if (!current || current.revokedAt !== null || sameCapacity(current.capacity, capacity)) return;
    const updated = await withGpuClaims(() =>
      this.hosts.withTransaction(async (tx): Promise<HostRecord | null> => {
        if (!(await this.hosts.updateCapacity(hostId, capacity, tx))) return null;
        await claimGpus(this.hosts, hostId, capacity.gpus, tx);
        return { ...current, capacity };
      }),
    );
    if (!updated) return;
    this.#events.emit('host:capacity', publicHost(updated));
    this.#deps.relay?.publish(FLEET_HOST_TOPIC, `capacity:${hostId}`, 1);
  }

  /** A sign of life: memory only (written by `flush`). Answers now. None from a revoked host (its last long-poll ending, a report under way when it was revoked). */
  #seen(hostId: string): number {
    const now = this.#presence.seen(hostId);
    if (!this.#revoked.has(hostId)) this.#events.emit('host:seen', { hostId, at: now });
    return now;
  }

  // ---- operations -----------------------------------------------------------------------------

  /** Queues an operation for a live host and wakes its agent (here or on another replica). 404 for an unknown or revoked host. */
  enqueue(hostId: string, op: NewOperation): Promise<Operation> {
    return this.#queue.enqueue(hostId, op);
  }

  /** The host's unacknowledged operations after `after`, oldest first (one page). */
  pending(hostId: string, after: number): Promise<Operation[]> {
    return this.#queue.pending(hostId, after);
  }

  /**
   * The agent's long-poll: `pending`, or wait up to `waitMs` for an operation. An open poll keeps
   * the host seen; a revocation meanwhile ends it with 401 HOST_REVOKED.
   */
  async waitForOperations(
    hostId: string,
    after: number,
    options: { waitMs: number; signal?: CancelSignal },
  ): Promise<Operation[]> {
    this.#seen(hostId);
    const closed = this.#presence.pollOpened(hostId);
    try {
      return await this.#queue.wait(hostId, after, options, () => this.#presence.assertLive(hostId));
    } finally {
      closed();
      this.#seen(hostId);
    }
  }

  /** Records the host's acknowledgements (idempotent); an id that is no operation of this host is ignored and answered. */
  ack(hostId: string, acks: readonly OperationAck[]): ReturnType<OperationQueue['ack']> {
    return this.#queue.ack(hostId, acks);
  }

  /** Long-polls of the host waiting on this replica. */
  waiting(hostId: string): number {
    return this.#queue.waiting(hostId);
  }

  // ---- the list -------------------------------------------------------------------------------

  async get(hostId: string): Promise<HostListing | null> {
    const host = await this.hosts.getHost(hostId);
    return host ? this.#listing(host) : null;
  }

  /** Every host (revoked ones too), its capacity, last sign of life and state. */
  async list(): Promise<HostListing[]> {
    return (await this.hosts.listHosts()).map((h) => this.#listing(h));
  }

  /** The latest sign of life of a host seen by this replica (a host polling now counts as seen now), or null. */
  lastSeen(hostId: string): number | null {
    return this.#presence.lastSeen(hostId);
  }

  #listing(host: HostRecord): HostListing {
    const lastSeenAt = Math.max(host.lastReportAt ?? 0, this.#presence.lastSeen(host.id) ?? 0) || null;
    return {
      ...publicHost(host),
      lastSeenAt,
      state: hostState(host, lastSeenAt, this.#deps.clock.now(), this.#deps.config.heartbeatTimeoutMs),
    };
  }

  // ---- replicas and chores --------------------------------------------------------------------

  /** A notification relayed from another replica (topics `FLEET_TOPICS`). */
  deliver(topic: string, key: string): void {
    if (topic === FLEET_OPS_TOPIC) return this.#queue.wake(key);
    if (topic === FLEET_ACK_TOPIC) {
      this.#relayedAcks.add(key);
      if (this.#relayedAcks.size === 1) setImmediate(() => void this.#readRelayedAcks());
      return;
    }
    if (topic === FLEET_HOST_TOPIC) void this.#hostChanged(key);
  }

  /** Relayed notifications may have been lost: every long-poll reads again, revocations are looked for now. */
  wakeAll(): void {
    this.#queue.wakeAll();
    void this.syncRevocations().catch(() => undefined);
  }

  async #hostChanged(key: string): Promise<void> {
    const [kind, hostId] = [key.slice(0, key.indexOf(':')), key.slice(key.indexOf(':') + 1)];
    if (kind === 'resync') {
      this.#fullWantedSince = this.#deps.clock.now();
      return;
    }
    try {
      const host = await this.hosts.getHost(hostId);
      if (!host) return;
      if (host.revokedAt !== null) return this.#revokedHere(hostId, host.revokedAt);
      if (kind === 'joined') this.#events.emit('host:joined', publicHost(host));
      else if (kind === 'capacity') this.#events.emit('host:capacity', publicHost(host));
    } catch (err) {
      this.#deps.logger?.warn({ hostId, err: (err as Error).message }, 'reading a host another replica changed failed');
    }
  }

  async #readRelayedAcks(): Promise<void> {
    const ids = [...this.#relayedAcks];
    this.#relayedAcks = new Set();
    try {
      const byHost = new Map<string, ReturnType<typeof ackedOperation>[]>();
      for (const row of await this.operations.get(ids)) {
        if (row.state !== 'acked') continue;
        byHost.set(row.hostId, [...(byHost.get(row.hostId) ?? []), ackedOperation(row)]);
      }
      for (const [hostId, acks] of byHost) this.#events.emit('acks', { hostId, acks, relayed: true });
    } catch (err) {
      this.#deps.logger?.warn(
        { err: (err as Error).message },
        'reading operations acknowledged on another replica failed',
      );
    }
  }

  /** Finds hosts revoked elsewhere (the CLI, a replica whose notification was lost) since the last look. */
  async syncRevocations(): Promise<void> {
    const now = this.#deps.clock.now();
    const found = await this.hosts.revokedSince(this.#revocationsCheckedAt - REVOCATION_MARGIN_MS);
    this.#revocationsCheckedAt = now;
    for (const { id, revokedAt } of found) if (!this.#revoked.has(id)) this.#revokedHere(id, revokedAt);
  }

  /** Writes the last-seen times gathered since the last flush (hosts holding a long-poll count as seen now). Answers how many hosts. */
  flush(): Promise<number> {
    return this.#presence.flush();
  }

  /** Deletes acknowledged operations and spent or expired join tokens past their retention. */
  async prune(): Promise<{ operations: number; tokens: number }> {
    const now = this.#deps.clock.now();
    return {
      operations: await this.operations.pruneAcked(now - ACKED_RETENTION_MS),
      tokens: await this.hosts.pruneJoinTokens(now - SPENT_TOKEN_RETENTION_MS),
    };
  }

  async #tick(): Promise<void> {
    if (this.#chore) return;
    const tick = ++this.#ticks;
    this.#chore = (async () => {
      // an installation without agents pays nothing: no host to refuse, nobody to tell
      if (this.#presence.size > 0 || this.#events.listens('host:revoked')) await this.syncRevocations();
      if (tick % flushEveryTicks(this.#deps.config) === 0) await this.flush();
      if (tick % PRUNE_EVERY_TICKS === 0) await this.prune();
    })()
      .catch((err: unknown) => this.#deps.logger?.warn({ err: (err as Error).message }, 'a fleet chore failed'))
      .finally(() => {
        this.#chore = null;
      });
    await this.#chore;
  }
}
