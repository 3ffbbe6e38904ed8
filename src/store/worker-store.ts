import { sql } from 'kysely';
import { LIVE_WORKER_STATUSES, TERMINAL_WORKER_STATUSES, type WorkerStatus } from '../domain/worker-state.js';
import type { Db } from './database.js';
import { switchWorkerUsage } from './worker-usage-switch.js';

/** A sign of life to write: the worker's status and when it was last heard from. */
export interface WorkerSighting {
  endpointId: string;
  workerId: string;
  status: WorkerStatus;
  lastSeen: number;
}

/**
 * The `workers` table as the workers registry and the hand-attached cap read and write it: one
 * row per (endpoint, worker id). The autoscaler's own reads of it are in `autoscaler-store.ts`.
 */
export class WorkerStore {
  constructor(private readonly db: Db) {}

  /** Writes each sighting over its row, unless the row left the live statuses meanwhile; one transaction. */
  async writeSightings(sightings: readonly WorkerSighting[], now: number): Promise<void> {
    await this.db.withTransaction(async (tx) => {
      for (const s of sightings) {
        await tx
          .updateTable('workers')
          .set({ status: s.status, last_ping_at: s.lastSeen, updated_at: now })
          .where('endpoint_id', '=', s.endpointId)
          .where('id', '=', s.workerId)
          .where('status', 'in', [...LIVE_WORKER_STATUSES, 'initializing'])
          .execute();
      }
    });
  }

  /**
   * Records a sighting at once: a new row, or the returning worker's row with its new status.
   * Answers the row's host (set for a worker the platform launched, null for one attached by hand).
   */
  async upsertSighting(
    endpointId: string,
    workerId: string,
    status: WorkerStatus,
    now: number,
  ): Promise<{ hostId: string | null } | undefined> {
    const row = await this.db.kysely
      .insertInto('workers')
      .values({
        id: workerId,
        endpoint_id: endpointId,
        status,
        host_id: null,
        last_ping_at: now,
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) => oc.columns(['endpoint_id', 'id']).doUpdateSet({ status, last_ping_at: now, updated_at: now }))
      .returning('host_id')
      .executeTakeFirst();
    return row ? { hostId: row.host_id } : undefined;
  }

  /** Live or unhealthy workers whose last ping is before `cutoff`. */
  async silentSince(cutoff: number): Promise<Array<{ id: string; endpoint_id: string }>> {
    return this.db.kysely
      .selectFrom('workers')
      .select(['id', 'endpoint_id'])
      .where('status', 'in', [...LIVE_WORKER_STATUSES, 'unhealthy'])
      .where('last_ping_at', '<', cutoff)
      .execute();
  }

  /** Deletes the rows of workers in a terminal status since before `cutoff`; answers how many. */
  async deleteTerminalBefore(cutoff: number): Promise<number> {
    const res = await this.db.kysely
      .deleteFrom('workers')
      .where('status', 'in', [...TERMINAL_WORKER_STATUSES])
      .where('updated_at', '<', cutoff)
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  }

  /** Marks these workers of the endpoint dead. */
  async markDead(endpointId: string, ids: readonly string[], now: number): Promise<void> {
    await this.db.kysely
      .updateTable('workers')
      .set({ status: 'dead', updated_at: now })
      .where('endpoint_id', '=', endpointId)
      .where('id', 'in', [...ids])
      .execute();
    // A launched worker's usage interval (billing) ends with it.
    await this.db.kysely
      .updateTable('worker_usage')
      .set({ ended_at: now })
      .where('endpoint_id', '=', endpointId)
      .where('worker_id', 'in', [...ids])
      .where('ended_at', 'is', null)
      .execute();
  }

  /**
   * The worker was suspended at `now` (FlashBoot): status `suspended`, out of the heartbeat-loss
   * sweep; its usage interval is billed from now at `pricePerGpuHour` per GPU (worker-usage-switch.ts).
   * Only a row still alive is changed; answers whether it was.
   */
  async markSuspended(endpointId: string, id: string, now: number, pricePerGpuHour = 0): Promise<boolean> {
    return this.db.withTransaction(async (tx) => {
      const before = await tx
        .selectFrom('workers')
        .select('status')
        .where('endpoint_id', '=', endpointId)
        .where('id', '=', id)
        .executeTakeFirst();
      const res = await tx
        .updateTable('workers')
        .set({ status: 'suspended', suspended_at: now, updated_at: now })
        .where('endpoint_id', '=', endpointId)
        .where('id', '=', id)
        .where('status', 'in', [...LIVE_WORKER_STATUSES, 'initializing', 'suspended'])
        .executeTakeFirst();
      const changed = Number(res.numUpdatedRows) > 0;
      if (changed && before?.status !== 'suspended')
        await switchWorkerUsage(tx, endpointId, id, now, { suspendedPricePerGpuHour: pricePerGpuHour });
      return changed;
    });
  }

  /** The suspended worker was resumed at `now`: idle again, its heartbeat counting from now, billed as running again. */
  async markResumed(endpointId: string, id: string, now: number): Promise<boolean> {
    return this.db.withTransaction(async (tx) => {
      const res = await tx
        .updateTable('workers')
        .set({ status: 'idle', suspended_at: null, last_ping_at: now, updated_at: now })
        .where('endpoint_id', '=', endpointId)
        .where('id', '=', id)
        .where('status', '=', 'suspended')
        .executeTakeFirst();
      const changed = Number(res.numUpdatedRows) > 0;
      if (changed) await switchWorkerUsage(tx, endpointId, id, now, 'launch-rate');
      return changed;
    });
  }

  /** Live workers the platform launched (the row carries a host), per endpoint. */
  async liveLaunchedCounts(): Promise<Map<string, number>> {
    const rows = await this.db.kysely
      .selectFrom('workers')
      .select((eb) => ['endpoint_id', eb.fn.countAll<number>().as('n')])
      .where('status', 'in', [...LIVE_WORKER_STATUSES])
      .where('host_id', 'is not', null)
      .groupBy('endpoint_id')
      .execute();
    return new Map(rows.map((r) => [r.endpoint_id, Number(r.n)]));
  }

  /** The endpoint's worker rows counted by status. */
  async countByStatus(endpointId: string): Promise<Map<string, number>> {
    const rows = await this.db.kysely
      .selectFrom('workers')
      .select((eb) => ['status', eb.fn.countAll<number>().as('n')])
      .where('endpoint_id', '=', endpointId)
      .groupBy('status')
      .execute();
    return new Map(rows.map((r) => [r.status, Number(r.n)]));
  }

  /** How many of the endpoint's live workers hold a job in progress. */
  async liveWorkersWithJobs(endpointId: string): Promise<number> {
    const busy = await this.db.kysely
      .selectFrom('jobs')
      .select(sql<number>`COUNT(DISTINCT jobs.worker_id)`.as('n'))
      .where('jobs.endpoint_id', '=', endpointId)
      .where('jobs.status', '=', 'IN_PROGRESS')
      .where('jobs.worker_id', 'in', (eb) =>
        eb
          .selectFrom('workers')
          .select('workers.id')
          .where('workers.endpoint_id', '=', endpointId)
          .where('workers.status', 'in', [...LIVE_WORKER_STATUSES]),
      )
      .executeTakeFirst();
    return Number(busy?.n ?? 0);
  }

  /** The endpoint's hand-attached worker rows (no host) counted by status. */
  async countAttachedByStatus(endpointId: string): Promise<Array<{ status: WorkerStatus; n: number }>> {
    return this.db.kysely
      .selectFrom('workers')
      .select((eb) => ['status', eb.fn.countAll<number>().as('n')])
      .where('endpoint_id', '=', endpointId)
      .where('host_id', 'is', null)
      .groupBy('status')
      .execute();
  }

  /** Deletes the endpoint's dead hand-attached worker rows. */
  async deleteDeadAttached(endpointId: string): Promise<void> {
    await this.db.kysely
      .deleteFrom('workers')
      .where('endpoint_id', '=', endpointId)
      .where('host_id', 'is', null)
      .where('status', '=', 'dead')
      .execute();
  }

  /** The status of one worker's row, or undefined when it has none. */
  async statusOf(endpointId: string, workerId: string): Promise<string | undefined> {
    const own = await this.db.kysely
      .selectFrom('workers')
      .select('status')
      .where('endpoint_id', '=', endpointId)
      .where('id', '=', workerId)
      .executeTakeFirst();
    return own?.status;
  }
}
