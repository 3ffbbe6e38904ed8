import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { dialects, postgresUrl, type DialectName } from '../../../test/support/harness.js';
import { newId } from '../../domain/ids.js';
import { dropSchema, openDatabase, withSchemaChangeLock, type Db } from '../database.js';
import { MIGRATIONS } from './index.js';

/**
 * The keys databases already hold in `gantry_migrations`: what the two per-dialect lists
 * (`migrations/sqlite/index.ts`, `migrations/postgres/index.ts`) applied before they became one
 * list. Written out here, not derived from the code, so a key renamed, dropped or moved there fails.
 */
const RELEASED = [
  '0001-initial',
  '0002-serverless',
  '0003-webhook-deliveries-by-job',
  '0004-jobs-retried',
  '0005-worker-identity',
  '0006-job-usage',
  '0007-webhook-fairness',
  '0008-worker-allocation',
  '0009-fleet',
  '0010-fleet-journal',
  '0011-system-log',
  '0012-pod-ssh-token',
  '0013-billing-usage',
  '0014-endpoint-releases',
  '0015-registry-delegations',
  '0016-clusters',
  '0017-job-usage-insert-by-batch',
  '0018-status-change-min-cuda',
  '0019-job-taken-seq',
];
/** Both dialects applied the same keys in the same order. */
const RELEASED_KEYS: Record<DialectName, readonly string[]> = { sqlite: RELEASED, postgres: RELEASED };

/** The migrator as the released code set it up: these table names are facts a database holds too. */
const releasedMigrator = (db: Kysely<unknown>, dialect: DialectName, schema?: string): Migrator =>
  new Migrator({
    db,
    provider: {
      // The released step of each key is the one at its place in today's list: the DDL did not move.
      getMigrations: async () =>
        Object.fromEntries(RELEASED_KEYS[dialect].map((key, i) => [key, { up: MIGRATIONS[i]!.up[dialect] }])),
    },
    migrationTableName: 'gantry_migrations',
    migrationLockTableName: 'gantry_migrations_lock',
    ...(schema ? { migrationTableSchema: schema } : {}),
  });

interface Applied {
  name: string;
  timestamp: string;
}

const appliedOf = async (db: Kysely<unknown>): Promise<Applied[]> =>
  (
    await sql<{
      name: string;
      timestamp: unknown;
    }>`SELECT name, timestamp FROM gantry_migrations ORDER BY timestamp, name`.execute(db)
  ).rows.map((r) => ({ name: r.name, timestamp: String(r.timestamp) }));

/** A database as the released code left it, and a way to open it with today's code. */
interface Released {
  applied: Applied[];
  open(): Promise<Db>;
  cleanup(): Promise<void>;
}

async function releasedDatabase(dialect: DialectName): Promise<Released> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gantry-upgrade-'));
  if (dialect === 'sqlite') {
    const kysely = new Kysely<unknown>({
      dialect: new SqliteDialect({ database: new SqliteDatabase(join(dataDir, 'gantry.db')) }),
    });
    const { error } = await releasedMigrator(kysely, dialect).migrateToLatest();
    assert.ifError(error);
    const applied = await appliedOf(kysely);
    await kysely.destroy();
    return {
      applied,
      open: () => openDatabase({ url: null, dataDir }),
      cleanup: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  const url = postgresUrl()!;
  const schema = `t_${newId(12)}`;
  const setup = new pg.Client({ connectionString: url });
  await setup.connect();
  await setup.query(`CREATE SCHEMA ${schema}`);
  await setup.end();
  const pool = new pg.Pool({ connectionString: url, max: 2, options: `-c search_path=${schema}` });
  const kysely = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
  const { error } = await withSchemaChangeLock(url, () => releasedMigrator(kysely, dialect, schema).migrateToLatest());
  assert.ifError(error);
  const applied = await appliedOf(kysely);
  await kysely.destroy();
  return {
    applied,
    open: () => openDatabase({ url, dataDir, schema }),
    cleanup: async () => {
      await dropSchema(url, schema);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Tables, columns, indexes and triggers, as text that does not name the schema. */
async function shapeOf(db: Db): Promise<string[]> {
  if (db.dialect === 'sqlite')
    return (
      await sql<{
        s: string;
      }>`SELECT type || ' ' || name || ' ' || coalesce(sql, '') AS s FROM sqlite_master ORDER BY type, name`.execute(
        db.kysely,
      )
    ).rows.map((r) => r.s);
  const rows = await sql<{ s: string }>`
    SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') AS s
      FROM information_schema.columns WHERE table_schema = current_schema()
    UNION ALL SELECT regexp_replace(indexdef, ' ON \\w+\\.', ' ON ') FROM pg_indexes WHERE schemaname = current_schema()
    UNION ALL SELECT event_object_table || ' ' || trigger_name || ' ' || event_manipulation || ' ' || action_statement
      FROM information_schema.triggers WHERE trigger_schema = current_schema()`.execute(db.kysely);
  return rows.rows.map((r) => r.s).sort();
}

test('the migration keys are unique and in the order they are applied (their names sort in list order)', () => {
  const keys = MIGRATIONS.map((m) => m.key);
  assert.deepEqual(keys, [...new Set(keys)].sort());
});

for (const { name, skip } of dialects()) {
  describe(`migration keys on ${name}`, { skip }, () => {
    test('every released key stays, unrenamed and in its place; new migrations only follow them', () => {
      const keys = MIGRATIONS.map((m) => m.key);
      assert.deepEqual(keys.slice(0, RELEASED_KEYS[name].length), RELEASED_KEYS[name]);
    });

    test('a database migrated by the released list opens with no migration re-applied and none missing, shaped as a fresh one', async () => {
      const released = await releasedDatabase(name);
      const fresh = await openDatabase(
        name === 'sqlite'
          ? { url: null, dataDir: '', sqliteFile: ':memory:' }
          : { url: postgresUrl(), dataDir: '', schema: `t_${newId(12)}` },
      );
      try {
        assert.deepEqual(
          released.applied.map((a) => a.name),
          RELEASED_KEYS[name],
        );
        const upgraded = await released.open();
        try {
          const after = await appliedOf(upgraded.kysely as Kysely<unknown>);
          const added = MIGRATIONS.map((m) => m.key).slice(RELEASED_KEYS[name].length);
          assert.deepEqual(after.slice(0, released.applied.length), released.applied, 'no released step runs again');
          assert.deepEqual(
            after.slice(released.applied.length).map((a) => a.name),
            added,
            'only the migrations released after them are applied',
          );
          const freshKeys = (await appliedOf(fresh.kysely as Kysely<unknown>)).map((a) => a.name);
          assert.deepEqual(
            freshKeys,
            MIGRATIONS.map((m) => m.key),
            'a fresh database applies the same keys in order',
          );
          assert.deepEqual(await shapeOf(upgraded), await shapeOf(fresh));
        } finally {
          await upgraded.close();
        }
      } finally {
        await fresh.close();
        if (fresh.sessions) await dropSchema(postgresUrl()!, fresh.sessions.namespace);
        await released.cleanup();
      }
    });
  });
}
