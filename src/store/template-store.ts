import type { Template } from '../domain/template.js';
import type { Db, Executor } from './database.js';
import { fromJson, toJson } from './database.js';
import type { TemplatesTable } from './pod-tables.js';

/** What an update may change; identity, ownership and creation time are fixed. */
export type TemplateChanges = Partial<Omit<Template, 'id' | 'accountId' | 'isPublic' | 'createdAt'>>;

const toTemplate = (r: TemplatesTable): Template => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  imageName: r.image,
  args: r.args,
  containerDiskInGb: Number(r.container_disk_gb),
  volumeInGb: Number(r.volume_gb),
  volumeMountPath: r.volume_mount_path,
  ports: fromJson<string[]>(r.ports, []),
  env: fromJson<Record<string, string>>(r.env, {}),
  containerRegistryAuthId: r.registry_id,
  startSsh: r.start_ssh === 1,
  startJupyter: r.start_jupyter === 1,
  allowedCudaVersions: fromJson<string[]>(r.allowed_cuda_versions, []),
  isServerless: r.is_serverless === 1,
  isPublic: r.is_public === 1,
  category: r.category as Template['category'],
  readme: r.readme,
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
});

/** Column values for the fields present in `changes` (undefined = leave as is). */
function toColumns(changes: TemplateChanges): Partial<TemplatesTable> {
  const c = changes;
  const row: Partial<TemplatesTable> = {};
  if (c.name !== undefined) row.name = c.name;
  if (c.imageName !== undefined) row.image = c.imageName;
  if (c.args !== undefined) row.args = c.args;
  if (c.containerDiskInGb !== undefined) row.container_disk_gb = c.containerDiskInGb;
  if (c.volumeInGb !== undefined) row.volume_gb = c.volumeInGb;
  if (c.volumeMountPath !== undefined) row.volume_mount_path = c.volumeMountPath;
  if (c.ports !== undefined) row.ports = toJson(c.ports);
  if (c.env !== undefined) row.env = toJson(c.env);
  if (c.containerRegistryAuthId !== undefined) row.registry_id = c.containerRegistryAuthId;
  if (c.startSsh !== undefined) row.start_ssh = c.startSsh ? 1 : 0;
  if (c.startJupyter !== undefined) row.start_jupyter = c.startJupyter ? 1 : 0;
  if (c.allowedCudaVersions !== undefined) row.allowed_cuda_versions = toJson(c.allowedCudaVersions);
  if (c.isServerless !== undefined) row.is_serverless = c.isServerless ? 1 : 0;
  if (c.category !== undefined) row.category = c.category;
  if (c.readme !== undefined) row.readme = c.readme;
  if (c.updatedAt !== undefined) row.updated_at = c.updatedAt;
  return row;
}

const toRow = (t: Template): TemplatesTable => ({
  id: t.id,
  account_id: t.accountId,
  name: t.name,
  image: t.imageName,
  args: t.args,
  container_disk_gb: t.containerDiskInGb,
  volume_gb: t.volumeInGb,
  volume_mount_path: t.volumeMountPath,
  ports: toJson(t.ports),
  env: toJson(t.env),
  registry_id: t.containerRegistryAuthId,
  start_ssh: t.startSsh ? 1 : 0,
  start_jupyter: t.startJupyter ? 1 : 0,
  allowed_cuda_versions: toJson(t.allowedCudaVersions),
  is_serverless: t.isServerless ? 1 : 0,
  is_public: t.isPublic ? 1 : 0,
  category: t.category,
  readme: t.readme,
  created_at: t.createdAt,
  updated_at: t.updatedAt,
});

/** Templates: the accounts' own and the public catalog ones (account_id NULL). */
export class TemplateStore {
  constructor(private readonly db: Db) {}

  async insert(template: Template, tx: Executor = this.db.kysely): Promise<void> {
    await tx.insertInto('templates').values(toRow(template)).execute();
  }

  /** Inserts unless a template with this id exists; answers whether it inserted. Safe when replicas race. */
  async insertIfMissing(template: Template, tx: Executor = this.db.kysely): Promise<boolean> {
    const res = await tx
      .insertInto('templates')
      .values(toRow(template))
      .onConflict((oc) => oc.column('id').doNothing())
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  /** Any template by id, whoever owns it; callers decide what the caller may see. */
  async get(id: string, tx: Executor = this.db.kysely): Promise<Template | null> {
    const row = await tx.selectFrom('templates').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toTemplate(row) : null;
  }

  async listOwned(accountId: string, tx: Executor = this.db.kysely): Promise<Template[]> {
    const rows = await tx
      .selectFrom('templates')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toTemplate);
  }

  async listPublic(tx: Executor = this.db.kysely): Promise<Template[]> {
    const rows = await tx
      .selectFrom('templates')
      .selectAll()
      .where('is_public', '=', 1)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toTemplate);
  }

  /** Answers whether a template was updated. */
  async update(id: string, changes: TemplateChanges, tx: Executor = this.db.kysely): Promise<boolean> {
    const set = toColumns(changes);
    if (Object.keys(set).length === 0) return (await this.get(id, tx)) !== null;
    const res = await tx.updateTable('templates').set(set).where('id', '=', id).executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Answers whether a template was deleted. */
  async delete(id: string, tx: Executor = this.db.kysely): Promise<boolean> {
    const res = await tx.deleteFrom('templates').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  /** Ids of the account's pods, not yet TERMINATED, that were created from the template. */
  async podsReferencing(accountId: string, templateId: string, tx: Executor = this.db.kysely): Promise<string[]> {
    const rows = await tx
      .selectFrom('pods')
      .select('id')
      .where('account_id', '=', accountId)
      .where('template_id', '=', templateId)
      .where('status', '<>', 'TERMINATED')
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map((r) => r.id);
  }
}
