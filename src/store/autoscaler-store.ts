import { sql } from 'kysely';
import type { Db, Executor } from './database.js';
import { newId } from '../domain/ids.js';
import type { WorkerStatus } from '../domain/worker-state.js';

/** What a launched worker holds on its host, besides the host: enough to reserve it again after a restart. */
export interface WorkerAllocation {
  gpuIndices: number[];
  vcpus: number;
  memoryGb: number;
  diskGb: number;
  /** Where it was placed and what it runs, for the worker list (absent in rows written before 0014). */
  gpuTypeId?: string | null;
  dataCenterId?: string;
  image?: string;
  /** Its host ports (a load-balancing worker's PORT and PORT_HEALTH), reserved again on adoption (absent in earlier rows). */
  publicPorts?: number[];
}

/** Whose a launched worker's usage is and what it costs an hour (catalog prices at launch). */
export interface WorkerUsageStart {
  accountId: string;
  kind: 'gpu' | 'cpu';
  costPerHr: number;
}

/** A worker row the autoscaler launched (host_id set), not yet dead. */
export interface LaunchedWorkerRow {
  id: string;
  endpointId: string;
  /** As the workers registry last wrote it; never `dead`. */
  status: WorkerStatus;
  hostId: string;
  createdAt: number;
  lastPingAt: number | null;
  /** null for rows written before migration 0008 */
  allocation: WorkerAllocation | null;
  /** When it was suspended (status `suspended`); null otherwise. */
  suspendedAt: number | null;
  /** Its endpoint's account ('' when the endpoint is gone). */
  accountId: string;
}

/**
 * The reads and writes of the autoscaler loop. Worker rows it launches carry `host_id`; rows the
 * registry creates for workers attached by hand carry none, so the autoscaler never touches those.
 */
export class AutoscalerStore {
  constructor(private readonly db: Db) {}

  /** Every endpoint (queue-based and load-balancing), with its owner. */
  async endpointIds(
    tx: Executor = this.db.kysely,
  ): Promise<Array<{ id: string; accountId: string; workersMax: number }>> {
    const rows = await tx.selectFrom('endpoints').select(['id', 'account_id', 'workers_max']).orderBy('id').execute();
    return rows.map((r) => ({ id: r.id, accountId: r.account_id, workersMax: Number(r.workers_max) }));
  }

  /** The endpoints with FlashBoot on, oldest first (their images are pre-pulled: serverless/image-prepull.ts). */
  async flashbootEndpoints(tx: Executor = this.db.kysely): Promise<Array<{ id: string; accountId: string }>> {
    const rows = await tx
      .selectFrom('endpoints')
      .select(['id', 'account_id'])
      .where('flashboot', '=', 1)
      .orderBy('id')
      .execute();
    return rows.map((r) => ({ id: r.id, accountId: r.account_id }));
  }

  /** Every launched worker not marked dead. */
  async launchedWorkers(tx: Executor = this.db.kysely): Promise<LaunchedWorkerRow[]> {
    const rows = await tx
      .selectFrom('workers')
      .leftJoin('endpoints', 'endpoints.id', 'workers.endpoint_id')
      .selectAll('workers')
      .select('endpoints.account_id')
      .where('workers.status', '!=', 'dead')
      .where('workers.host_id', 'is not', null)
      .execute();
    return rows.map((r) => ({
      id: r.id,
      endpointId: r.endpoint_id,
      status: r.status,
      hostId: r.host_id!,
      createdAt: Number(r.created_at),
      lastPingAt: r.last_ping_at === null ? null : Number(r.last_ping_at),
      allocation: parseAllocation(r.allocation),
      suspendedAt: r.suspended_at == null ? null : Number(r.suspended_at),
      accountId: r.account_id ?? '',
    }));
  }

  /**
   * Records a worker just launched, with what it holds on its host: INITIALIZING until the registry
   * hears from it. Its usage interval (billing) opens with it, in the same transaction.
   */
  async insertLaunched(
    id: string,
    endpointId: string,
    hostId: string,
    allocation: WorkerAllocation,
    now: number,
    usage: WorkerUsageStart,
    tx?: Executor,
    endpointVersion: number | null = null,
  ): Promise<void> {
    const write = async (t: Executor): Promise<void> => {
      await t
        .insertInto('workers')
        .values({
          id,
          endpoint_id: endpointId,
          status: 'initializing',
          host_id: hostId,
          last_ping_at: null,
          created_at: now,
          updated_at: now,
          allocation: JSON.stringify(allocation),
          endpoint_version: endpointVersion,
        })
        .execute();
      await t
        .insertInto('worker_usage')
        .values({
          id: newId(),
          worker_id: id,
          endpoint_id: endpointId,
          account_id: usage.accountId,
          kind: usage.kind,
          cost_per_hr: usage.costPerHr,
          started_at: now,
          ended_at: null,
        })
        .execute();
    };
    await (tx ? write(tx) : this.db.withTransaction(write));
  }

  /** Workers of the endpoint holding jobs in progress, with how many. */
  async busyWorkers(endpointId: string, tx: Executor = this.db.kysely): Promise<Map<string, number>> {
    const rows = await tx
      .selectFrom('jobs')
      .select((eb) => ['worker_id', eb.fn.countAll<number>().as('n')])
      .where('endpoint_id', '=', endpointId)
      .where('status', '=', 'IN_PROGRESS')
      .groupBy('worker_id')
      .execute();
    return new Map(rows.filter((r) => r.worker_id !== null).map((r) => [r.worker_id!, Number(r.n)]));
  }

  /** Queued jobs that are not low-priority, counted up to `cap` (queue order; reads stop there). */
  async urgentQueued(endpointId: string, cap: number, tx: Executor = this.db.kysely): Promise<number> {
    const head = tx
      .selectFrom('jobs')
      .select(sql<number>`1`.as('one'))
      .where('endpoint_id', '=', endpointId)
      .where('status', '=', 'IN_QUEUE')
      .where('low_priority', '=', 0)
      .limit(cap)
      .as('head');
    const row = await tx
      .selectFrom(head)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /** Whether any job of the endpoint is queued (the index alone answers). */
  async anyQueued(endpointId: string, tx: Executor = this.db.kysely): Promise<boolean> {
    const row = await tx
      .selectFrom('jobs')
      .select('id')
      .where('endpoint_id', '=', endpointId)
      .where('status', '=', 'IN_QUEUE')
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** When the first queued job that is not low-priority (queue order) entered the queue; null when none. */
  async oldestUrgentQueuedAt(endpointId: string, tx: Executor = this.db.kysely): Promise<number | null> {
    const row = await tx
      .selectFrom('jobs')
      .select('queued_at')
      .where('endpoint_id', '=', endpointId)
      .where('status', '=', 'IN_QUEUE')
      .where('low_priority', '=', 0)
      .orderBy('seq')
      .limit(1)
      .executeTakeFirst();
    return row ? Number(row.queued_at) : null;
  }
}

/** A stored allocation, or null when there is none or it is not one (it is then not adopted). */
function parseAllocation(text: string | null): WorkerAllocation | null {
  if (text === null) return null;
  try {
    const a = JSON.parse(text) as Partial<WorkerAllocation>;
    const count = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0;
    if (
      !Array.isArray(a.gpuIndices) ||
      !a.gpuIndices.every((i) => Number.isInteger(i) && i >= 0) ||
      !count(a.vcpus) ||
      !count(a.memoryGb) ||
      !count(a.diskGb)
    )
      return null;
    const ports =
      Array.isArray(a.publicPorts) && a.publicPorts.every((p) => Number.isInteger(p) && p > 0 && p < 65_536)
        ? { publicPorts: a.publicPorts }
        : {};
    return { gpuIndices: a.gpuIndices, vcpus: a.vcpus, memoryGb: a.memoryGb, diskGb: a.diskGb, ...ports };
  } catch {
    return null;
  }
}
