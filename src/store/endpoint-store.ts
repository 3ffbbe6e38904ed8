import type { Endpoint, EndpointRelease, EndpointWorker, ReleaseDiffEntry, ScalerType } from '../domain/endpoint.js';
import type { Db, Executor } from './database.js';
import { fromJson, toJson } from './database.js';
import type { EndpointReleasesTable, EndpointsTable, WorkersTable } from './endpoint-tables.js';

const splitList = (text: string): string[] => (text === '' ? [] : text.split(','));

const toEndpoint = (r: EndpointsTable): Endpoint => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  templateId: r.template_id,
  type: r.type,
  gpuIds: splitList(r.gpu_ids),
  gpuCount: Number(r.gpu_count),
  instanceIds: splitList(r.instance_ids ?? ''),
  locations: splitList(r.locations),
  networkVolumeId: r.network_volume_id,
  idleTimeout: Number(r.idle_timeout_s),
  scalerType: r.scaler_type as ScalerType,
  scalerValue: Number(r.scaler_value),
  workersMin: Number(r.workers_min),
  workersMax: Number(r.workers_max),
  flashboot: Number(r.flashboot) === 1,
  flashBootKeepSeconds: Number(r.flashboot_keep_s ?? 600),
  allowedCudaVersions: fromJson<string[]>(r.allowed_cuda_versions, []),
  minCudaVersion: r.min_cuda_version ?? null,
  executionTimeoutMs: Number(r.execution_timeout_ms),
  env: fromJson<Record<string, string>>(r.env, {}),
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
  version: Number(r.version),
});

/** Every column but identity, ownership and creation time: what a replace writes. */
const toColumns = (e: Endpoint): Omit<EndpointsTable, 'id' | 'account_id' | 'created_at'> => ({
  name: e.name,
  template_id: e.templateId,
  type: e.type,
  gpu_ids: e.gpuIds.join(','),
  gpu_count: e.gpuCount,
  instance_ids: e.instanceIds.join(','),
  locations: e.locations.join(','),
  network_volume_id: e.networkVolumeId,
  idle_timeout_s: e.idleTimeout,
  scaler_type: e.scalerType,
  scaler_value: e.scalerValue,
  workers_min: e.workersMin,
  workers_max: e.workersMax,
  flashboot: e.flashboot ? 1 : 0,
  flashboot_keep_s: e.flashBootKeepSeconds,
  allowed_cuda_versions: toJson(e.allowedCudaVersions),
  min_cuda_version: e.minCudaVersion,
  execution_timeout_ms: e.executionTimeoutMs,
  env: toJson(e.env),
  updated_at: e.updatedAt,
  version: e.version,
});

const toWorker = (
  r: Pick<
    WorkersTable,
    'id' | 'endpoint_id' | 'status' | 'created_at' | 'last_ping_at' | 'allocation' | 'endpoint_version'
  >,
): EndpointWorker => {
  const a = fromJson<{ gpuIndices?: unknown; gpuTypeId?: unknown; dataCenterId?: unknown; image?: unknown }>(
    r.allocation,
    {},
  );
  const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);
  return {
    id: r.id,
    endpointId: r.endpoint_id,
    status: r.status,
    createdAt: Number(r.created_at),
    lastPingAt: r.last_ping_at === null ? null : Number(r.last_ping_at),
    endpointVersion: r.endpoint_version === null ? null : Number(r.endpoint_version),
    gpuCount: Array.isArray(a.gpuIndices) ? a.gpuIndices.length : 0,
    gpuTypeId: text(a.gpuTypeId),
    dataCenterId: text(a.dataCenterId),
    image: text(a.image),
  };
};

const toRelease = (r: EndpointReleasesTable): EndpointRelease => ({
  id: r.id,
  endpointId: r.endpoint_id,
  accountId: r.account_id,
  version: Number(r.version),
  source: 'MANUAL',
  diff: fromJson<ReleaseDiffEntry[]>(r.diff, []),
  createdAt: Number(r.created_at),
});

/** Serverless endpoints, always read through their owning account. */
export class EndpointStore {
  constructor(private readonly db: Db) {}

  /** Runs `fn` in one transaction (an endpoint change and its release are written together). */
  async transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    return this.db.withTransaction(fn);
  }

  async insertRelease(release: EndpointRelease, tx: Executor = this.db.kysely): Promise<void> {
    await tx
      .insertInto('endpoint_releases')
      .values({
        id: release.id,
        endpoint_id: release.endpointId,
        account_id: release.accountId,
        version: release.version,
        source: release.source,
        diff: toJson(release.diff),
        created_at: release.createdAt,
      })
      .execute();
  }

  /** The releases of an endpoint, newest first. */
  async releases(endpointId: string, tx: Executor = this.db.kysely): Promise<EndpointRelease[]> {
    const rows = await tx
      .selectFrom('endpoint_releases')
      .selectAll()
      .where('endpoint_id', '=', endpointId)
      .orderBy('version', 'desc')
      .execute();
    return rows.map(toRelease);
  }

  async insert(endpoint: Endpoint, tx: Executor = this.db.kysely): Promise<void> {
    await tx
      .insertInto('endpoints')
      .values({
        id: endpoint.id,
        account_id: endpoint.accountId,
        created_at: endpoint.createdAt,
        ...toColumns(endpoint),
      })
      .execute();
  }

  /** The account's endpoint, or null (also for another account's). */
  async get(accountId: string, id: string, tx: Executor = this.db.kysely): Promise<Endpoint | null> {
    const row = await tx
      .selectFrom('endpoints')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return row ? toEndpoint(row) : null;
  }

  /** The account's endpoints, oldest first. */
  async list(accountId: string, tx: Executor = this.db.kysely): Promise<Endpoint[]> {
    const rows = await tx
      .selectFrom('endpoints')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toEndpoint);
  }

  /**
   * Writes `next` over the stored row only while it still has `expectedVersion` (optimistic
   * concurrency); answers whether it did. `next.version` is written as given.
   */
  async replace(next: Endpoint, expectedVersion: number, tx: Executor = this.db.kysely): Promise<boolean> {
    const res = await tx
      .updateTable('endpoints')
      .set(toColumns(next))
      .where('id', '=', next.id)
      .where('account_id', '=', next.accountId)
      .where('version', '=', expectedVersion)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Answers whether an endpoint was deleted. */
  async delete(accountId: string, id: string, tx?: Executor): Promise<boolean> {
    const run = async (t: Executor): Promise<boolean> => {
      const res = await t
        .deleteFrom('endpoints')
        .where('id', '=', id)
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      if (Number(res.numDeletedRows) === 0) return false;
      await t.deleteFrom('endpoint_releases').where('endpoint_id', '=', id).execute();
      return true;
    };
    return tx ? run(tx) : this.db.withTransaction(run);
  }

  /** The account's endpoints bound to a template, oldest first (template delete refuses while any). */
  async boundToTemplate(
    accountId: string,
    templateId: string,
    tx: Executor = this.db.kysely,
  ): Promise<Array<Pick<Endpoint, 'id' | 'name'>>> {
    return tx
      .selectFrom('endpoints')
      .select(['id', 'name'])
      .where('template_id', '=', templateId)
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  }

  /** The workers of an endpoint, oldest first. */
  async workers(endpointId: string, tx: Executor = this.db.kysely): Promise<EndpointWorker[]> {
    const rows = await tx
      .selectFrom('workers')
      .select(['id', 'endpoint_id', 'status', 'created_at', 'last_ping_at', 'allocation', 'endpoint_version'])
      .where('endpoint_id', '=', endpointId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toWorker);
  }
}
