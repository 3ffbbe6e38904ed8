/**
 * What the replicas sharing one database know of each other's load balancing (docs/load-balancing.md,
 * "Replicas"):
 * - each replica's demand per load-balancing endpoint (`lb_demand`, migration 0023): requests
 *   waiting for a ready worker, requests held, and per worker the requests it holds from that
 *   replica and when it last finished one. A replica writes its whole picture at once
 *   (`publish`); the autoscaler's replica sums the rows fresher than a TTL (`read`), so a dead
 *   replica's demand expires with its heartbeat;
 * - the launched workers of load-balancing endpoints (`balancedWorkers`), so that every replica's
 *   balancer sends requests to them, wherever they were launched.
 */
import type { Db, Executor } from './database.js';

/** One replica's traffic of one endpoint. */
export interface LbEndpointDemand {
  endpointId: string;
  waiting: number;
  inFlight: number;
  /**
   * By worker id: the requests it holds from this replica, and when it last finished one (ms epoch);
   * `resumeWanted`, requests pinned `strict-resume` to it that wait (FlashBoot resumes it for them);
   * `preferredWaiting`, requests naming it softly that wait (resumed first among suspended ones).
   */
  workers: Record<
    string,
    { outstanding: number; lastActiveAt: number; resumeWanted?: number; preferredWaiting?: number }
  >;
}

/** A launched worker of a load-balancing endpoint, as the workers table says. */
export interface BalancedWorkerRow {
  id: string;
  endpointId: string;
  accountId: string;
  /** Its host ports (WorkerAllocation.publicPorts): `PORT`'s, then `PORT_HEALTH`'s when it differs. */
  publicPorts: number[];
  /** Its row says `suspended` (FlashBoot): its instance is frozen. */
  suspended: boolean;
}

const count = (n: unknown): number => (typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : 0);

/** A stored `workers` value, or nothing of it when it is not one. */
function parseWorkers(text: string): LbEndpointDemand['workers'] {
  const out: LbEndpointDemand['workers'] = {};
  try {
    const raw = JSON.parse(text) as unknown;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return out;
    for (const [id, v] of Object.entries(raw as Record<string, unknown>))
      // (a later version's longer entries are read as far as this one knows them)
      if (Array.isArray(v) && v.length >= 2 && Number.isFinite(v[1]))
        out[id] = {
          outstanding: count(v[0]),
          lastActiveAt: Number(v[1]),
          ...(count(v[2]) > 0 ? { resumeWanted: count(v[2]) } : {}),
          ...(count(v[3]) > 0 ? { preferredWaiting: count(v[3]) } : {}),
        };
  } catch {
    // not JSON: no workers
  }
  return out;
}

export class LbDemandStore {
  constructor(private readonly db: Db) {}

  /**
   * Replaces the replica's rows with `demand` (one per endpoint), all stamped `now`: endpoints it
   * no longer lists lose their row.
   */
  async publish(replicaId: string, demand: readonly LbEndpointDemand[], now: number): Promise<void> {
    await this.db.withTransaction(async (tx) => {
      const listed = demand.map((d) => d.endpointId);
      let drop = tx.deleteFrom('lb_demand').where('replica_id', '=', replicaId);
      if (listed.length > 0) drop = drop.where('endpoint_id', 'not in', listed);
      await drop.execute();
      for (const d of demand) {
        const row = {
          waiting: count(d.waiting),
          in_flight: count(d.inFlight),
          workers: JSON.stringify(
            // [held, last finish], then the strict-resume and the soft requests waiting for it when
            // there are any (an older replica reads the first three only)
            Object.fromEntries(
              Object.entries(d.workers).map(([id, w]) => [
                id,
                count(w.preferredWaiting) > 0
                  ? [w.outstanding, w.lastActiveAt, count(w.resumeWanted), w.preferredWaiting]
                  : count(w.resumeWanted) > 0
                    ? [w.outstanding, w.lastActiveAt, w.resumeWanted]
                    : [w.outstanding, w.lastActiveAt],
              ]),
            ),
          ),
          updated_at: now,
        };
        await tx
          .insertInto('lb_demand')
          .values({ replica_id: replicaId, endpoint_id: d.endpointId, ...row })
          .onConflict((oc) => oc.columns(['replica_id', 'endpoint_id']).doUpdateSet(row))
          .execute();
      }
    });
  }

  /**
   * Every other replica's demand fresher than `since` (updated at or after it), summed per
   * endpoint: requests waiting and held, and per worker the requests held and the latest finish.
   */
  async read(since: number, exceptReplica: string | null, tx: Executor = this.db.kysely): Promise<LbEndpointDemand[]> {
    let q = tx.selectFrom('lb_demand').selectAll().where('updated_at', '>=', since);
    if (exceptReplica !== null) q = q.where('replica_id', '!=', exceptReplica);
    const byEndpoint = new Map<string, LbEndpointDemand>();
    for (const r of await q.execute()) {
      let d = byEndpoint.get(r.endpoint_id);
      if (!d) byEndpoint.set(r.endpoint_id, (d = { endpointId: r.endpoint_id, waiting: 0, inFlight: 0, workers: {} }));
      d.waiting += count(Number(r.waiting));
      d.inFlight += count(Number(r.in_flight));
      for (const [id, w] of Object.entries(parseWorkers(r.workers))) {
        const seen = d.workers[id];
        const resumeWanted = (seen?.resumeWanted ?? 0) + (w.resumeWanted ?? 0);
        const preferredWaiting = (seen?.preferredWaiting ?? 0) + (w.preferredWaiting ?? 0);
        d.workers[id] = seen
          ? {
              outstanding: seen.outstanding + w.outstanding,
              lastActiveAt: Math.max(seen.lastActiveAt, w.lastActiveAt),
              ...(resumeWanted > 0 ? { resumeWanted } : {}),
              ...(preferredWaiting > 0 ? { preferredWaiting } : {}),
            }
          : w;
      }
    }
    return [...byEndpoint.values()].sort((a, b) => (a.endpointId < b.endpointId ? -1 : 1));
  }

  /** Removes rows not updated since `before` (replicas gone); answers how many. */
  async prune(before: number): Promise<number> {
    const res = await this.db.kysely.deleteFrom('lb_demand').where('updated_at', '<', before).executeTakeFirst();
    return Number(res.numDeletedRows);
  }

  /** Removes every row of the replica (it shuts down). */
  async withdraw(replicaId: string): Promise<void> {
    await this.db.kysely.deleteFrom('lb_demand').where('replica_id', '=', replicaId).execute();
  }

  /** Every launched worker not marked dead of a load-balancing endpoint, with its host ports. */
  async balancedWorkers(tx: Executor = this.db.kysely): Promise<BalancedWorkerRow[]> {
    const rows = await tx
      .selectFrom('workers')
      .innerJoin('endpoints', 'endpoints.id', 'workers.endpoint_id')
      .select(['workers.id as id', 'workers.endpoint_id as endpoint_id', 'endpoints.account_id as account_id'])
      .select(['workers.allocation as allocation', 'workers.status as status'])
      .where('endpoints.type', '=', 'LB')
      .where('workers.status', '!=', 'dead')
      .where('workers.host_id', 'is not', null)
      .orderBy('workers.id')
      .execute();
    return rows.map((r) => ({
      id: r.id,
      endpointId: r.endpoint_id,
      accountId: r.account_id,
      publicPorts: publicPortsOf(r.allocation),
      suspended: r.status === 'suspended',
    }));
  }
}

/** The host ports an allocation's JSON records (none when it records none, or is not one). */
function publicPortsOf(allocation: string | null): number[] {
  if (allocation === null) return [];
  try {
    const ports = (JSON.parse(allocation) as { publicPorts?: unknown }).publicPorts;
    return Array.isArray(ports) && ports.every((p) => Number.isInteger(p) && p > 0 && p < 65_536)
      ? (ports as number[])
      : [];
  } catch {
    return [];
  }
}
