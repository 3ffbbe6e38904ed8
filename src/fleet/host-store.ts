/**
 * Join tokens and joined hosts (migration 0009): one SQL operation per method, `now` passed in,
 * an optional `tx`. Tokens and credentials arrive hashed (host-secrets.ts).
 */
import { sql } from 'kysely';
import type { Cloud } from '../domain/catalog.js';
import { LIVE_POD_STATUSES } from '../domain/pod-state.js';
import { HOLDING_WORKER_STATUSES } from '../domain/worker-state.js';
import { fromJson, toJson, type Db, type Executor } from '../store/database.js';
import type { HostsTable } from '../store/host-tables.js';
import type { HostCapacity } from './protocol.js';

export interface JoinTokenRecord {
  hash: string;
  dataCenterId: string;
  cloud: Cloud;
  createdAt: number;
  expiresAt: number;
}

export interface HostRecord {
  id: string;
  name: string;
  credentialHash: string;
  dataCenterId: string;
  cloud: Cloud;
  publicIp: string;
  portRange: [number, number];
  capacity: HostCapacity;
  agentVersion: string;
  joinedAt: number;
  lastReportAt: number | null;
  revokedAt: number | null;
}

/** Rows per batched last-seen update (3 parameters each, far under both dialects' limits). */
const TOUCH_CHUNK = 500;

const toHost = (r: HostsTable): HostRecord => ({
  id: r.id,
  name: r.name,
  credentialHash: r.credential_hash,
  dataCenterId: r.data_center_id,
  cloud: r.cloud as Cloud,
  publicIp: r.public_ip,
  portRange: [Number(r.port_first), Number(r.port_last)],
  capacity: fromJson<HostCapacity>(r.capacity, {
    vcpus: 0,
    memoryGb: 0,
    diskGb: 0,
    gpus: [],
    cudaVersion: null,
    gpuMode: 'env-only',
    cpuFlavors: [],
    notes: [],
  }),
  agentVersion: r.agent_version,
  joinedAt: Number(r.joined_at),
  lastReportAt: r.last_report_at === null ? null : Number(r.last_report_at),
  revokedAt: r.revoked_at === null ? null : Number(r.revoked_at),
});

export class HostStore {
  constructor(private readonly db: Db) {}

  /** Runs `fn` in one transaction, for a service composing several of these writes (a join, a capacity change). */
  withTransaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    return this.db.withTransaction(fn);
  }

  async insertJoinToken(token: JoinTokenRecord, tx: Executor = this.db.kysely): Promise<void> {
    await tx
      .insertInto('join_tokens')
      .values({
        hash: token.hash,
        data_center_id: token.dataCenterId,
        cloud: token.cloud,
        created_at: token.createdAt,
        expires_at: token.expiresAt,
        used_at: null,
        used_by_host: null,
      })
      .execute();
  }

  /**
   * Spends the token for `hostId` if it is unused and unexpired at `now`; answers where the host
   * goes, or null (unknown, used or expired: the caller cannot tell which, and neither can anyone
   * it answers). One conditional update: two joins racing with one token, one wins.
   */
  async spendJoinToken(
    hash: string,
    hostId: string,
    now: number,
    tx: Executor = this.db.kysely,
  ): Promise<{ dataCenterId: string; cloud: Cloud } | null> {
    const row = await tx
      .updateTable('join_tokens')
      .set({ used_at: now, used_by_host: hostId })
      .where('hash', '=', hash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returning(['data_center_id', 'cloud'])
      .executeTakeFirst();
    return row ? { dataCenterId: row.data_center_id, cloud: row.cloud as Cloud } : null;
  }

  /** Deletes tokens that expired or were spent before `before`. Answers how many. */
  async pruneJoinTokens(before: number, tx: Executor = this.db.kysely): Promise<number> {
    const res = await tx
      .deleteFrom('join_tokens')
      .where((eb) => eb.or([eb('expires_at', '<', before), eb('used_at', '<', before)]))
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  }

  async insertHost(host: HostRecord, tx: Executor = this.db.kysely): Promise<void> {
    await tx
      .insertInto('hosts')
      .values({
        id: host.id,
        name: host.name,
        credential_hash: host.credentialHash,
        data_center_id: host.dataCenterId,
        cloud: host.cloud,
        public_ip: host.publicIp,
        port_first: host.portRange[0],
        port_last: host.portRange[1],
        capacity: toJson(host.capacity),
        agent_version: host.agentVersion,
        op_seq: 0,
        joined_at: host.joinedAt,
        last_report_at: host.lastReportAt,
        revoked_at: host.revokedAt,
      })
      .execute();
  }

  async getHost(id: string, tx: Executor = this.db.kysely): Promise<HostRecord | null> {
    const row = await tx.selectFrom('hosts').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toHost(row) : null;
  }

  /** Every host, revoked ones included, oldest first. */
  async listHosts(tx: Executor = this.db.kysely): Promise<HostRecord[]> {
    const rows = await tx.selectFrom('hosts').selectAll().orderBy('joined_at').orderBy('id').execute();
    return rows.map(toHost);
  }

  /** Of `uuids`, those another host holds: GPU UUID → that host's id. */
  async gpuOwners(uuids: readonly string[], tx: Executor = this.db.kysely): Promise<Map<string, string>> {
    if (uuids.length === 0) return new Map();
    const rows = await tx
      .selectFrom('host_gpus')
      .select(['uuid', 'host_id'])
      .where('uuid', 'in', [...uuids])
      .execute();
    return new Map(rows.map((r) => [r.uuid, r.host_id]));
  }

  /** Makes `uuids` the host's GPUs (the primary key refuses one another host holds). */
  async setHostGpus(hostId: string, uuids: readonly string[], tx: Executor = this.db.kysely): Promise<void> {
    await tx.deleteFrom('host_gpus').where('host_id', '=', hostId).execute();
    if (uuids.length > 0)
      await tx
        .insertInto('host_gpus')
        .values(uuids.map((uuid) => ({ uuid, host_id: hostId })))
        .execute();
  }

  /** Replaces a live host's capacity; answers whether it is live. */
  async updateCapacity(hostId: string, capacity: HostCapacity, tx: Executor = this.db.kysely): Promise<boolean> {
    const res = await tx
      .updateTable('hosts')
      .set({ capacity: toJson(capacity) })
      .where('id', '=', hostId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /**
   * Writes last-report times gathered in memory, a few hundred hosts per statement. A time never
   * moves back (another replica may have written a later one).
   */
  async touchHosts(
    seen: ReadonlyArray<readonly [hostId: string, at: number]>,
    tx: Executor = this.db.kysely,
  ): Promise<void> {
    for (let i = 0; i < seen.length; i += TOUCH_CHUNK) {
      const chunk = seen.slice(i, i + TOUCH_CHUNK);
      const cases = sql.join(
        chunk.map(([id, at]) => sql`WHEN ${id} THEN CAST(${at} AS BIGINT)`),
        sql` `,
      );
      const value = sql`(CASE id ${cases} END)`;
      await tx
        .updateTable('hosts')
        .set({
          last_report_at: sql<number>`CASE WHEN last_report_at IS NULL OR last_report_at < ${value} THEN ${value} ELSE last_report_at END`,
        })
        .where(
          'id',
          'in',
          chunk.map(([id]) => id),
        )
        .execute();
    }
  }

  /**
   * Revokes a host in one transaction: its credential stops working, its GPUs are free to join
   * again, its pending operations are dropped (no agent will pull them). Answers the host as
   * revoked, or null when there is no live host of that id.
   */
  async revokeHost(hostId: string, now: number): Promise<HostRecord | null> {
    return this.db.withTransaction(async (tx) => {
      const res = await tx
        .updateTable('hosts')
        .set({ revoked_at: now })
        .where('id', '=', hostId)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) === 0) return null;
      await tx.deleteFrom('host_gpus').where('host_id', '=', hostId).execute();
      await tx.deleteFrom('host_operations').where('host_id', '=', hostId).where('state', '=', 'pending').execute();
      return this.getHost(hostId, tx);
    });
  }

  /** Hosts revoked at or after `since`. */
  async revokedSince(since: number, tx: Executor = this.db.kysely): Promise<Array<{ id: string; revokedAt: number }>> {
    const rows = await tx
      .selectFrom('hosts')
      .select(['id', 'revoked_at'])
      .where('revoked_at', 'is not', null)
      .where('revoked_at', '>=', since)
      .execute();
    return rows.map((r) => ({ id: r.id, revokedAt: Number(r.revoked_at) }));
  }

  /** Instances each host holds by the records (pods placed and not stopped, workers not dead): host id → count. */
  async instanceCounts(tx: Executor = this.db.kysely): Promise<Map<string, number>> {
    const pods = await tx
      .selectFrom('pods')
      .select(['host_id', (eb) => eb.fn.countAll<number>().as('n')])
      .where('host_id', 'is not', null)
      .where('status', 'in', LIVE_POD_STATUSES)
      .groupBy('host_id')
      .execute();
    const workers = await tx
      .selectFrom('workers')
      .select(['host_id', (eb) => eb.fn.countAll<number>().as('n')])
      .where('host_id', 'is not', null)
      .where('status', 'in', HOLDING_WORKER_STATUSES)
      .groupBy('host_id')
      .execute();
    const counts = new Map<string, number>();
    for (const r of [...pods, ...workers]) counts.set(r.host_id!, (counts.get(r.host_id!) ?? 0) + Number(r.n));
    return counts;
  }
}
