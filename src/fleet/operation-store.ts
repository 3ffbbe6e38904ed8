/**
 * The operations queue of each host (migration 0009). Bodies arrive sealed (the service seals
 * them with the server's SecretBox); this store never sees them in clear.
 *
 * Sequence numbers come from the host row (`op_seq`), bumped in the transaction that inserts the
 * operation: the row lock is held until commit, so on PostgreSQL a second enqueue for the same
 * host waits and takes the next number only once the first is visible. An agent reading
 * `seq > after` can therefore never see operation n+1 committed while n is still invisible.
 */
import type { Db, Executor } from '../store/database.js';
import type { HostOperationsTable } from '../store/host-tables.js';

import type { OperationKind } from './protocol.js';

export interface OperationRow {
  id: string;
  hostId: string;
  seq: number;
  kind: OperationKind;
  instanceId: string | null;
  volumeId: string | null;
  /** sealed JSON of the operation */
  body: string;
  state: 'pending' | 'acked';
  ackOk: boolean | null;
  ackError: string | null;
  createdAt: number;
  ackedAt: number | null;
}

export interface NewOperationRow {
  id: string;
  kind: OperationKind;
  instanceId: string | null;
  volumeId: string | null;
  body: string;
}

export interface AckRow {
  id: string;
  ok: boolean;
  error: string | null;
}

const toRow = (r: HostOperationsTable): OperationRow => ({
  id: r.id,
  hostId: r.host_id,
  seq: Number(r.seq),
  kind: r.kind as OperationKind,
  instanceId: r.instance_id,
  volumeId: r.volume_id,
  body: r.body,
  state: r.state,
  ackOk: r.ack_ok === null ? null : r.ack_ok === 1,
  ackError: r.ack_error,
  createdAt: Number(r.created_at),
  ackedAt: r.acked_at === null ? null : Number(r.acked_at),
});

export class OperationStore {
  constructor(private readonly db: Db) {}

  /** Queues an operation for a live host; answers its sequence number, or null when the host is unknown or revoked. */
  async enqueue(hostId: string, op: NewOperationRow, now: number): Promise<number | null> {
    return this.db.withTransaction(async (tx) => {
      const bumped = await tx
        .updateTable('hosts')
        .set((eb) => ({ op_seq: eb('op_seq', '+', 1) }))
        .where('id', '=', hostId)
        .where('revoked_at', 'is', null)
        .returning('op_seq')
        .executeTakeFirst();
      if (!bumped) return null;
      const seq = Number(bumped.op_seq);
      await tx
        .insertInto('host_operations')
        .values({
          id: op.id,
          host_id: hostId,
          seq,
          kind: op.kind,
          instance_id: op.instanceId,
          volume_id: op.volumeId,
          body: op.body,
          state: 'pending',
          ack_ok: null,
          ack_error: null,
          created_at: now,
          acked_at: null,
        })
        .execute();
      return seq;
    });
  }

  /** The host's unacknowledged operations with `seq > after`, oldest first, at most `limit`. */
  async pending(hostId: string, after: number, limit: number, tx: Executor = this.db.kysely): Promise<OperationRow[]> {
    const rows = await tx
      .selectFrom('host_operations')
      .selectAll()
      .where('host_id', '=', hostId)
      .where('state', '=', 'pending')
      .where('seq', '>', after)
      .orderBy('seq')
      .limit(limit)
      .execute();
    return rows.map(toRow);
  }

  /**
   * Records acknowledgements from `hostId`. Only the host's own pending operations change; a
   * repeated ack changes nothing (the first result stands). Answers the operations acknowledged
   * now, and the ids that are no operation of this host (unknown, or another host's: the caller
   * cannot tell which).
   */
  async ack(
    hostId: string,
    acks: readonly AckRow[],
    now: number,
  ): Promise<{ applied: OperationRow[]; unknown: string[] }> {
    if (acks.length === 0) return { applied: [], unknown: [] };
    return this.db.withTransaction(async (tx) => {
      const ids = [...new Set(acks.map((a) => a.id))];
      const own = new Map(
        (
          await tx
            .selectFrom('host_operations')
            .selectAll()
            .where('host_id', '=', hostId)
            .where('id', 'in', ids)
            .execute()
        ).map((r) => [r.id, toRow(r)]),
      );
      const applied: OperationRow[] = [];
      const seen = new Set<string>();
      for (const a of acks) {
        const row = own.get(a.id);
        if (!row || row.state !== 'pending' || seen.has(a.id)) continue;
        seen.add(a.id);
        const res = await tx
          .updateTable('host_operations')
          .set({ state: 'acked', ack_ok: a.ok ? 1 : 0, ack_error: a.ok ? null : a.error, acked_at: now })
          .where('id', '=', a.id)
          .where('host_id', '=', hostId)
          .where('state', '=', 'pending')
          .executeTakeFirst();
        if (Number(res.numUpdatedRows) > 0)
          applied.push({ ...row, state: 'acked', ackOk: a.ok, ackError: a.ok ? null : a.error, ackedAt: now });
      }
      return { applied, unknown: ids.filter((id) => !own.has(id)) };
    });
  }

  /** Operations by id (any host, any state). */
  async get(ids: readonly string[], tx: Executor = this.db.kysely): Promise<OperationRow[]> {
    if (ids.length === 0) return [];
    const rows = await tx
      .selectFrom('host_operations')
      .selectAll()
      .where('id', 'in', [...ids])
      .execute();
    return rows.map(toRow);
  }

  /** Deletes operations acknowledged before `before`. Answers how many. */
  async pruneAcked(before: number, tx: Executor = this.db.kysely): Promise<number> {
    const res = await tx
      .deleteFrom('host_operations')
      .where('state', '=', 'acked')
      .where('acked_at', '<', before)
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}
