/**
 * The control plane's side of the agent protocol (docs/fleet.md): join tokens, joins, host
 * credentials, reports, each host's operations, revocation, the list of hosts. Transport-free:
 * the routes under `/agent/v1` (src/http/routes/agent.ts) and the CLI call it. A join and a
 * changed capacity are written by host-registration.ts, revocations kept by host-revocations.ts,
 * what other replicas relay is read by fleet-relay.ts, and the chores run on the timer of
 * fleet-chores.ts.
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
import { FleetChores, pruneFleet } from './fleet-chores.js';
import { FleetEmitter, publicHost, type FleetEvents, type FleetHost, type FleetListener } from './fleet-events.js';
import { FLEET_ACK_TOPIC, FLEET_HOST_TOPIC, RelayedFleetNotices } from './fleet-relay.js';
import { FullReportRequests } from './full-reports.js';
import { HostPresence } from './host-presence.js';
import { registerHost, updateHostCapacity } from './host-registration.js';
import { HostRevocations } from './host-revocations.js';
import { hostState, type HostState } from './host-state.js';
import { createJoinToken, type CreatedJoinToken } from './join-tokens.js';
import type { HostStore, HostRecord } from './host-store.js';
import { OperationQueue } from './operation-queue.js';
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

export class FleetService {
  readonly hosts: HostStore;
  readonly operations: OperationStore;
  readonly #deps: FleetServiceDeps;
  readonly #queue: OperationQueue;
  readonly #events: FleetEmitter;
  readonly #presence: HostPresence;
  readonly #revocations: HostRevocations;
  #ownership: OwnershipCheck;
  readonly #chores: FleetChores;
  readonly #relayed: RelayedFleetNotices;
  readonly #fullReports = new FullReportRequests();

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
    this.#revocations = new HostRevocations({
      hosts: this.hosts,
      clock: deps.clock,
      stop: (hostId, at) => {
        this.#presence.revoked(hostId, at);
        // its long-polls answer 401 HOST_REVOKED now rather than at their time out
        this.#queue.wake(hostId);
      },
      announce: (hostId, at) => {
        this.#deps.logger?.info({ hostId }, 'a host was revoked');
        this.#events.emit('host:revoked', { hostId, at });
      },
    });
    this.#chores = new FleetChores(
      {
        // an installation without agents pays nothing: no host to refuse, nobody to tell
        watchesRevocations: () => this.#presence.size > 0 || this.#events.listens('host:revoked'),
        syncRevocations: () => this.syncRevocations(),
        flush: () => this.flush(),
        prune: () => this.prune(),
      },
      deps.config,
      deps.logger,
    );
    this.#relayed = new RelayedFleetNotices({
      hosts: this.hosts,
      operations: this.operations,
      events: this.#events,
      wake: (hostId) => this.#queue.wake(hostId),
      revoked: (hostId, at) => this.#revocations.revoked(hostId, at),
      resync: () => this.#fullReports.request(deps.clock.now()),
      logger: deps.logger,
    });
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
    this.#chores.start();
  }

  /** Ends every long-poll (with what it has), stops the chores, writes the last-seen times. */
  async close(): Promise<void> {
    this.#queue.close();
    await this.#chores.stop();
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
    const { host, credential } = await registerHost(this.#deps, request);
    const hostId = host.id;
    this.#presence.joined(hostId, host.credentialHash, host.joinedAt);
    this.#deps.logger?.info(
      { hostId, name: host.name, dataCenterId: host.dataCenterId, gpus: host.capacity.gpus.length },
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
    this.#revocations.revoked(hostId, host.revokedAt!);
    this.#deps.relay?.publish(FLEET_HOST_TOPIC, `revoked:${hostId}`, 1);
    return publicHost(host);
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
    const sendFull = this.#fullReports.wanted(hostId, report.instances?.full === true, now);
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
    this.#fullReports.request(this.#deps.clock.now());
    this.#deps.relay?.publish(FLEET_HOST_TOPIC, 'resync:*', 1);
  }

  async #updateCapacity(hostId: string, raw: unknown): Promise<void> {
    const updated = await updateHostCapacity(this.#deps, hostId, raw);
    if (!updated) return;
    this.#events.emit('host:capacity', publicHost(updated));
    this.#deps.relay?.publish(FLEET_HOST_TOPIC, `capacity:${hostId}`, 1);
  }

  /** A sign of life: memory only (written by `flush`). Answers now. None from a revoked host (its last long-poll ending, a report under way when it was revoked). */
  #seen(hostId: string): number {
    const now = this.#presence.seen(hostId);
    if (!this.#revocations.has(hostId)) this.#events.emit('host:seen', { hostId, at: now });
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
    this.#relayed.deliver(topic, key);
  }

  /** Relayed notifications may have been lost: every long-poll reads again, revocations are looked for now. */
  wakeAll(): void {
    this.#queue.wakeAll();
    void this.syncRevocations().catch(() => undefined);
  }

  /** Finds hosts revoked elsewhere (the CLI, a replica whose notification was lost) since the last look. */
  syncRevocations(): Promise<void> {
    return this.#revocations.sync();
  }

  /** Writes the last-seen times gathered since the last flush (hosts holding a long-poll count as seen now). Answers how many hosts. */
  flush(): Promise<number> {
    return this.#presence.flush();
  }

  /** Deletes acknowledged operations and spent or expired join tokens past their retention. */
  async prune(): Promise<{ operations: number; tokens: number }> {
    return pruneFleet(this, this.#deps.clock.now());
  }
}
