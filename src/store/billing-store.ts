import type { Db, Executor } from './database.js';

/** A usage interval as billing prices it: [startedAt, endedAt) at `costPerHr` (endedAt null: still open). */
export interface PricedInterval {
  /** the pod, cluster, serverless endpoint or network volume the interval is billed to */
  resourceId: string;
  /** which amount it counts in: `gpu`/`cpu` for compute, `standard` for storage */
  kind: 'gpu' | 'cpu' | 'standard';
  startedAt: number;
  endedAt: number | null;
  /** USD per hour (compute); for volumes, GB held (the service prices them) */
  rate: number;
}

/** What billing reads of one account's intervals overlapping a window, optionally of one resource. */
export interface IntervalQuery {
  accountId: string;
  start: number;
  end: number;
  resourceId?: string | undefined;
}

/**
 * Reads of the append-only usage intervals (`pod_usage`, `worker_usage`, `volume_usage`): the
 * records of the account that overlap the window, whatever was deleted or pruned since.
 */
export class BillingStore {
  constructor(private readonly db: Db) {}

  /**
   * Standalone pods' RUNNING intervals (a cluster's members are billed to their cluster); a pod
   * with a GPU type counts as `gpu`, one with a CPU flavor as `cpu`.
   */
  podIntervals(q: IntervalQuery, tx: Executor = this.db.kysely): Promise<PricedInterval[]> {
    return this.#podUsage(q, 'pod', tx);
  }

  /** Cluster members' RUNNING intervals, billed to their cluster (`resourceId` a cluster id). */
  clusterIntervals(q: IntervalQuery, tx: Executor = this.db.kysely): Promise<PricedInterval[]> {
    return this.#podUsage(q, 'cluster', tx);
  }

  async #podUsage(q: IntervalQuery, billedTo: 'pod' | 'cluster', tx: Executor): Promise<PricedInterval[]> {
    let query = tx
      .selectFrom('pod_usage as u')
      .leftJoin('pods as p', 'p.id', 'u.pod_id')
      .select(['u.pod_id', 'u.cost_per_hr', 'u.started_at', 'u.ended_at', 'p.gpu_type_id', 'p.cluster'])
      .where('u.account_id', '=', q.accountId)
      .where('u.started_at', '<', q.end)
      .where((eb) => eb.or([eb('u.ended_at', 'is', null), eb('u.ended_at', '>', q.start)]))
      .where('p.cluster', billedTo === 'pod' ? 'is' : 'is not', null);
    if (q.resourceId !== undefined)
      query = query.where(billedTo === 'pod' ? 'u.pod_id' : 'p.cluster', '=', q.resourceId);
    const rows = await query.orderBy('u.started_at').orderBy('u.id').execute();
    return rows.map((r) => ({
      resourceId: billedTo === 'pod' ? r.pod_id : r.cluster!,
      kind: r.gpu_type_id === null ? 'cpu' : 'gpu',
      startedAt: Number(r.started_at),
      endedAt: r.ended_at === null ? null : Number(r.ended_at),
      rate: Number(r.cost_per_hr),
    }));
  }

  /** Launched serverless workers' intervals, billed to their endpoint. */
  async workerIntervals(q: IntervalQuery, tx: Executor = this.db.kysely): Promise<PricedInterval[]> {
    let query = tx
      .selectFrom('worker_usage')
      .select(['endpoint_id', 'kind', 'cost_per_hr', 'started_at', 'ended_at'])
      .where('account_id', '=', q.accountId)
      .where('started_at', '<', q.end)
      .where((eb) => eb.or([eb('ended_at', 'is', null), eb('ended_at', '>', q.start)]));
    if (q.resourceId !== undefined) query = query.where('endpoint_id', '=', q.resourceId);
    const rows = await query.orderBy('started_at').orderBy('id').execute();
    return rows.map((r) => ({
      resourceId: r.endpoint_id,
      kind: r.kind === 'cpu' ? 'cpu' : 'gpu',
      startedAt: Number(r.started_at),
      endedAt: r.ended_at === null ? null : Number(r.ended_at),
      rate: Number(r.cost_per_hr),
    }));
  }

  /** Network volumes' intervals at one size; `rate` is the size in GB. */
  async volumeIntervals(q: IntervalQuery, tx: Executor = this.db.kysely): Promise<PricedInterval[]> {
    let query = tx
      .selectFrom('volume_usage')
      .select(['volume_id', 'size_gb', 'started_at', 'ended_at'])
      .where('account_id', '=', q.accountId)
      .where('started_at', '<', q.end)
      .where((eb) => eb.or([eb('ended_at', 'is', null), eb('ended_at', '>', q.start)]));
    if (q.resourceId !== undefined) query = query.where('volume_id', '=', q.resourceId);
    const rows = await query.orderBy('started_at').orderBy('id').execute();
    return rows.map((r) => ({
      resourceId: r.volume_id,
      kind: 'standard',
      startedAt: Number(r.started_at),
      endedAt: r.ended_at === null ? null : Number(r.ended_at),
      rate: Number(r.size_gb),
    }));
  }
}
