/**
 * `runtime: fleet` put together (docs/fleet.md): the fleet service's events feed the runtime's
 * host feed (`hosts`, runtime/host-feed.ts, which the inventory follows: hosts that join, change,
 * go quiet, come back, are revoked) and the FleetRuntime (what each
 * host's agent reports and acknowledges); the records say which host an instance id belongs to.
 *
 * - At start the joined hosts enter the inventory (before the pod controller re-reserves its
 *   pods' allocations); a host whose last report is older than the heartbeat timeout starts out
 *   of placement, and the runtime learns of the revoked ones.
 * - Every sign of life gives its host a deadline in the inventory (the sign plus
 *   `fleet.heartbeatTimeoutMs`): the first decision or count past it leaves the host out (the
 *   inventory checks before each), and `check()` runs at once to confirm: the host's instances
 *   then read `unknown`. The check also runs every heartbeat. A host's next report puts it back.
 * - A revoked host leaves the inventory for good (`removeHost`) and the runtime ends its
 *   instances; nothing it or another replica says of it afterwards brings it back.
 * - With several replicas (`journal`, fleet-journal.ts), an agent talks to one at a time: that
 *   replica feeds its runtime and journals what the agent acknowledged and reported; the others
 *   read the journal (woken through the relay, and every `JOURNAL_READ_MS` in case a wake-up was
 *   lost) and replay it, so every replica's runtime knows every instance. A journaled report is a
 *   sign of life of its host there. Heartbeats alone are not journaled: last-report times reach the
 *   others through the database (written every few seconds), which `check()` reads every time (with
 *   replicas), before taking a quiet host out and to bring one back, so every replica judges
 *   availability alike. A replica that starts asks every host for a full report (`sendFull`).
 */
import type { Logger } from 'pino';
import type { Catalog } from '../domain/catalog.js';
import type { Clock } from '../domain/clock.js';
import { STOPPED_POD_STATUSES } from '../domain/pod-state.js';
import type { WorkerStatus } from '../domain/worker-state.js';
import type { Db } from '../store/database.js';
import { LiveHosts } from '../runtime/host-feed.js';
import type { FleetJournal } from './fleet-journal.js';
import type { OrphanContainers } from './orphan-containers.js';
import { isNotPlacedHere } from './report-screen.js';
import type { FleetRuntime, FleetPlacements, PlacedInstance } from './fleet-runtime.js';
import type { FleetHost } from './fleet-events.js';
import type { FleetService } from './fleet-service.js';
import { inventoryHost } from './host-capacity.js';

/**
 * Worker rows whose instance is meant to run: a suspended worker's container is paused, not gone,
 * so a restarted control plane expects it (and adopts it suspended) rather than removing it.
 */
const LIVE_WORKERS = [
  'initializing',
  'idle',
  'running',
  'unhealthy',
  'suspended',
] as const satisfies readonly WorkerStatus[];
/** How often a replica reads the journal when no wake-up came. */
const JOURNAL_READ_MS = 1_000;
/** How often old journal entries are pruned. */
const JOURNAL_PRUNE_MS = 60_000;

/** Which host each instance id was placed on, from the pods' and workers' records. */
export function recordPlacements(db: Db): Required<FleetPlacements> {
  return {
    async placed(ids) {
      const found = new Map<string, PlacedInstance>();
      if (ids.length === 0) return found;
      const unique = [...new Set(ids)];
      for (let i = 0; i < unique.length; i += 500) {
        const chunk = unique.slice(i, i + 500);
        const pods = await db.kysely
          .selectFrom('pods')
          .select(['id', 'host_id', 'account_id'])
          .where('id', 'in', chunk)
          .execute();
        for (const p of pods)
          if (p.host_id !== null)
            found.set(p.id, { hostId: p.host_id, owner: { kind: 'pod', accountId: p.account_id } });
        const workers = await db.kysely
          .selectFrom('workers')
          .innerJoin('endpoints', 'endpoints.id', 'workers.endpoint_id')
          .select([
            'workers.id as id',
            'workers.host_id as host_id',
            'workers.endpoint_id as endpoint_id',
            'endpoints.account_id as account_id',
          ])
          .where('workers.id', 'in', chunk)
          .execute();
        for (const w of workers)
          if (w.host_id !== null)
            found.set(w.id, {
              hostId: w.host_id,
              owner: { kind: 'worker', accountId: w.account_id, endpointId: w.endpoint_id },
            });
      }
      return found;
    },
    async expected() {
      const pods = await db.kysely
        .selectFrom('pods')
        .select(['id', 'host_id', 'account_id'])
        .where('desired_status', '=', 'RUNNING')
        .where('status', 'not in', STOPPED_POD_STATUSES)
        .where('host_id', 'is not', null)
        .execute();
      const workers = await db.kysely
        .selectFrom('workers')
        .innerJoin('endpoints', 'endpoints.id', 'workers.endpoint_id')
        .select([
          'workers.id as id',
          'workers.host_id as host_id',
          'workers.endpoint_id as endpoint_id',
          'endpoints.account_id as account_id',
        ])
        .where('workers.status', 'in', LIVE_WORKERS)
        .where('workers.allocation', 'is not', null)
        .where('workers.host_id', 'is not', null)
        .execute();
      return [
        ...pods.map((p) => ({
          id: p.id,
          hostId: p.host_id!,
          owner: { kind: 'pod' as const, accountId: p.account_id },
        })),
        ...workers.map((w) => ({
          id: w.id,
          hostId: w.host_id!,
          owner: { kind: 'worker' as const, accountId: w.account_id, endpointId: w.endpoint_id },
        })),
      ];
    },
  };
}

export interface FleetWiringDeps {
  fleet: FleetService;
  runtime: FleetRuntime;
  placements: FleetPlacements;
  catalog: Catalog;
  clock: Clock;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  config: { heartbeatMs: number; heartbeatTimeoutMs: number };
  /** Several replicas share the database (PostgreSQL): what each learns goes through it. @default one replica */
  journal?: FleetJournal | null;
  /** Containers no record places on their host, removed after a grace. @default none removed */
  orphans?: OrphanContainers | null;
}

export class FleetWiring {
  /** The joined hosts, as they come and go: the runtime's host feed. A host past its deadline there is checked at once. */
  readonly hosts = new LiveHosts({ onLapse: () => void this.check() });
  readonly #d: FleetWiringDeps;
  readonly #off: Array<() => void> = [];
  /** last sign of life per host in the fleet (not revoked) known here (reports to this replica, or the database's) */
  readonly #lastSeen = new Map<string, number>();
  /** hosts the runtime was told are unreachable */
  readonly #away = new Set<string>();
  /** hosts revoked: never placed on again */
  readonly #revoked = new Set<string>();
  #timer: NodeJS.Timeout | null = null;
  #journalTimer: NodeJS.Timeout | null = null;
  #checking: Promise<void> | null = null;
  #checkAgain = false;
  #pulling: Promise<void> | null = null;
  #pullAgain = false;
  #prunedAt = 0;

  constructor(deps: FleetWiringDeps) {
    this.#d = deps;
  }

  /** Loads the joined hosts into the inventory and starts following the fleet. Before the pod controller starts. */
  async start(): Promise<void> {
    const { fleet, runtime, catalog, clock, config, journal } = this.#d;
    const hosts = this.hosts;
    // A host may claim only what the records placed on it (report-screen.ts: the instances the
    // runtime tracks answer from memory, the others are looked up); the runtime then takes the
    // accepted items as screened.
    fleet.setOwnership(async (hostId, ids, full) => {
      const refused = await runtime.refusals(hostId, ids);
      this.#d.orphans?.noted(hostId, {
        full,
        reported: ids,
        orphans: refused.filter(isNotPlacedHere).map((r) => r.id),
      });
      return new Map(refused.map((r) => [r.id, r.reason]));
    });
    this.#d.orphans?.start();
    await journal?.start();
    const now = clock.now();
    for (const host of await fleet.list()) {
      if (host.revokedAt !== null) {
        this.#revoked.add(host.id);
        runtime.hostRevoked(host.id, host.revokedAt);
        continue;
      }
      this.#join(host, host.lastSeenAt ?? host.joinedAt);
      const seen = this.#lastSeen.get(host.id)!;
      if (now - seen > config.heartbeatTimeoutMs) this.#down(host.id, seen);
    }
    this.#off.push(
      fleet.on('host:joined', (h) => this.#join(h, clock.now())),
      fleet.on('host:capacity', (h) => {
        if (!this.#revoked.has(h.id)) hosts.upserted(inventoryHost(h, catalog));
      }),
      fleet.on('host:revoked', ({ hostId, at }) => {
        this.#revoked.add(hostId);
        this.#lastSeen.delete(hostId);
        this.#away.delete(hostId);
        hosts.removed(hostId);
        runtime.hostRevoked(hostId, at);
        this.#d.orphans?.forgetHost(hostId);
      }),
      fleet.on('host:seen', ({ hostId, at }) => {
        if (!this.#lastSeen.has(hostId)) return;
        this.#renew(hostId, at);
        this.#up(hostId);
      }),
      fleet.on('acks', ({ hostId, acks, relayed }) => {
        // With a journal, acks made through another replica come in order with its reports.
        if (relayed && journal) return;
        // A stream's ack is its own business (fleet-streams.ts): the instance is not changed by it.
        const plain = acks
          .filter((a) => a.kind !== 'stream')
          .map((a) => ({
            opId: a.opId,
            ok: a.ok,
            ...(a.error !== null ? { error: a.error } : {}),
            ...(a.result ? { result: a.result } : {}),
          }));
        if (plain.length === 0) return;
        void runtime.applyAcks(hostId, plain);
        if (!relayed) journal?.append(hostId, { t: 'acks', acks: plain });
      }),
      fleet.on('stats', ({ hostId, stats }) => runtime.applyStats(hostId, stats)),
      fleet.on('instances', ({ hostId, full, items }) => {
        void runtime.applyReport(hostId, { full, items }, { screened: true });
        journal?.append(hostId, { t: 'report', full, items });
      }),
    );
    this.#timer = setInterval(
      () => void this.check(),
      Math.max(200, Math.min(config.heartbeatMs, config.heartbeatTimeoutMs / 3)),
    );
    this.#timer.unref();
  }

  /**
   * With several replicas, once the relay is connected: asks every host for a full report (this
   * replica has heard none) and starts following the journal.
   */
  followReplicas(): void {
    if (!this.#d.journal || this.#journalTimer) return;
    this.#d.fleet.requestFullReports();
    this.#journalTimer = setInterval(() => void this.pull(), JOURNAL_READ_MS);
    this.#journalTimer.unref();
    void this.pull();
  }

  /** Reads and replays what the other replicas journaled since the last read (a relayed wake-up, the timer; tests call it). */
  pull(): Promise<void> {
    const journal = this.#d.journal;
    if (!journal) return Promise.resolve();
    if (this.#pulling) {
      this.#pullAgain = true;
      return this.#pulling;
    }
    this.#pulling = (async () => {
      try {
        do {
          this.#pullAgain = false;
          const { records, more } = await journal.read();
          for (const r of records) {
            await this.#d.runtime.replay(r.hostId, r.entry);
            if (r.entry.t === 'acks' || r.entry.t === 'report') this.#heard(r.hostId, r.at);
          }
          if (more) this.#pullAgain = true;
        } while (this.#pullAgain);
        const now = this.#d.clock.now();
        if (now - this.#prunedAt >= JOURNAL_PRUNE_MS) {
          this.#prunedAt = now;
          await journal.prune(now);
        }
      } catch (err) {
        this.#d.logger.error({ err }, 'reading the fleet journal failed');
      } finally {
        this.#pulling = null;
      }
    })();
    return this.#pulling;
  }

  /** A sign of life of the host heard through another replica. */
  #heard(hostId: string, at: number): void {
    if (!this.#lastSeen.has(hostId)) return;
    this.#renew(hostId, at);
    if (this.#d.clock.now() - at <= this.#d.config.heartbeatTimeoutMs) this.#up(hostId);
  }

  /**
   * Takes hosts that have not reported within the heartbeat timeout out (the runtime reads their
   * instances `unknown`), and brings back those another replica heard from since. Run by a timer,
   * and at once when the inventory finds a host past its deadline; tests call it. A call while one
   * runs makes that one run again.
   */
  check(): Promise<void> {
    if (this.#checking) {
      this.#checkAgain = true;
      return this.#checking;
    }
    this.#checking = (async () => {
      try {
        do {
          this.#checkAgain = false;
          await this.#check(this.#d.clock.now());
        } while (this.#checkAgain);
      } catch (err) {
        this.#d.logger.error({ err }, 'checking the hosts’ heartbeats failed');
      } finally {
        this.#checking = null;
      }
    })();
    return this.#checking;
  }

  async #check(now: number): Promise<void> {
    const { config, fleet } = this.#d;
    const quiet = [...this.#lastSeen].some(([id, at]) => !this.#away.has(id) && now - at > config.heartbeatTimeoutMs);
    // With replicas, the hosts are read every check anyway: the others' last-report times keep
    // the deadlines here current, and a join announced while this replica's relay was down would
    // otherwise never reach its inventory.
    if (!quiet && !this.#d.journal) return;
    // Another replica may have heard from a quiet host: the database knows (written every few seconds).
    for (const h of await fleet.list()) {
      if (h.revokedAt !== null || this.#revoked.has(h.id)) continue;
      const seen = h.lastSeenAt ?? h.joinedAt;
      if (!this.#lastSeen.has(h.id)) this.#join(h, seen);
      else this.#renew(h.id, seen);
    }
    for (const [id, at] of this.#lastSeen) {
      if (now - at > config.heartbeatTimeoutMs) this.#down(id, at);
      else this.#up(id);
    }
  }

  /** A host enters the inventory (joined, or found in the database), last seen at `seen`. */
  #join(host: FleetHost, seen: number): void {
    if (this.#revoked.has(host.id)) return;
    this.hosts.upserted(inventoryHost(host, this.#d.catalog));
    this.#lastSeen.delete(host.id);
    this.#renew(host.id, seen);
  }

  /** A sign of life at `at`: the host's deadline in the inventory moves to `at` plus the timeout. */
  #renew(hostId: string, at: number): void {
    if (this.#revoked.has(hostId)) return;
    const known = this.#lastSeen.get(hostId);
    if (known !== undefined && known >= at) return;
    this.#lastSeen.set(hostId, at);
    this.hosts.reachableUntil(hostId, at + this.#d.config.heartbeatTimeoutMs);
  }

  /** The host was heard from within the timeout: back in placement (when out), its instances as reported. */
  #up(hostId: string): void {
    if (this.#revoked.has(hostId)) return;
    const wasAway = this.#away.delete(hostId);
    // Back in placement, should its deadline have lapsed there before this sign of life (a no-op when in).
    this.hosts.available(hostId, true);
    if (!wasAway) return;
    this.#d.runtime.hostAvailable(hostId);
    this.#d.logger.info({ hostId }, 'host reports again');
  }

  #down(hostId: string, since: number): void {
    if (this.#away.has(hostId)) return;
    this.#away.add(hostId);
    this.hosts.available(hostId, false);
    this.#d.runtime.hostUnavailable(hostId, since);
    this.#d.logger.warn(
      { hostId, since: new Date(since).toISOString() },
      'host missed its heartbeats: out of placement',
    );
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    if (this.#journalTimer) clearInterval(this.#journalTimer);
    this.#d.orphans?.stop();
    this.#timer = null;
    this.#journalTimer = null;
    for (const off of this.#off.splice(0)) off();
  }
}
