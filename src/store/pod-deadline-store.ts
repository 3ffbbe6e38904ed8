import type { PodDeadline } from '../domain/pod-deadline.js';
import type { Db, Executor } from './database.js';

/** A pod's deadline as the sweep reads it. */
export interface StoredPodDeadline extends PodDeadline {
  podId: string;
}

const nullableNumber = (v: number | string | null): number | null => (v === null ? null : Number(v));

/** Pods' own stop and termination times (`pod_deadlines`, migration 0020). */
export class PodDeadlineStore {
  constructor(private readonly db: Db) {}

  /** Stores the pod's deadline (replacing one it had). */
  async set(podId: string, deadline: PodDeadline, tx: Executor = this.db.kysely): Promise<void> {
    const row = { stop_after: deadline.stopAfter, terminate_after: deadline.terminateAfter };
    await tx
      .insertInto('pod_deadlines')
      .values({ pod_id: podId, ...row })
      .onConflict((oc) => oc.column('pod_id').doUpdateSet(row))
      .execute();
  }

  async get(podId: string): Promise<PodDeadline | null> {
    const row = await this.db.kysely
      .selectFrom('pod_deadlines')
      .select(['stop_after', 'terminate_after'])
      .where('pod_id', '=', podId)
      .executeTakeFirst();
    return row
      ? { stopAfter: nullableNumber(row.stop_after), terminateAfter: nullableNumber(row.terminate_after) }
      : null;
  }

  /** Deadlines with a time at or before `now`, at most `limit` (by pod id). */
  async listDue(now: number, limit: number): Promise<StoredPodDeadline[]> {
    const rows = await this.db.kysely
      .selectFrom('pod_deadlines')
      .select(['pod_id', 'stop_after', 'terminate_after'])
      .where((eb) => eb.or([eb('stop_after', '<=', now), eb('terminate_after', '<=', now)]))
      .orderBy('pod_id')
      .limit(limit)
      .execute();
    return rows.map((r) => ({
      podId: r.pod_id,
      stopAfter: nullableNumber(r.stop_after),
      terminateAfter: nullableNumber(r.terminate_after),
    }));
  }

  /** The stop time was acted on: forgets it, and the row when no termination time is left. */
  async clearStop(podId: string): Promise<void> {
    await this.db.withTransaction(async (tx) => {
      await tx.updateTable('pod_deadlines').set({ stop_after: null }).where('pod_id', '=', podId).execute();
      await tx
        .deleteFrom('pod_deadlines')
        .where('pod_id', '=', podId)
        .where('stop_after', 'is', null)
        .where('terminate_after', 'is', null)
        .execute();
    });
  }

  /** Forgets the pod's deadline (it was terminated). */
  async delete(podId: string): Promise<void> {
    await this.db.kysely.deleteFrom('pod_deadlines').where('pod_id', '=', podId).execute();
  }
}
