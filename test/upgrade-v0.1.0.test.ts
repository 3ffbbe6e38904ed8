/**
 * Upgrading in place: a data dir written by Gantry v0.1.0 (test/fixtures/upgrade-v0.1.0, made by
 * scripts/make-upgrade-fixture.ts) is served by today's `gantry serve` — its migrations run on
 * start — and every object v0.1.0 wrote is there and works (test/support/upgrade-world.ts), on
 * SQLite and on PostgreSQL (the fixture's pg_dump replayed into a schema of the test's own).
 *
 * The fixture's clock is first moved to now, as if v0.1.0 had written it just before the upgrade:
 * every epoch-millisecond value of the fixture's month (times, deadlines) moves by the fixture's
 * age. Otherwise, as the fixture ages, the retention of completed results and the queued job's TTL
 * would expire them — as they would on a live data dir left that long.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { dialects, postgresUrl, type DialectName } from './support/harness.js';
import { runGantry, spawnGantry } from './support/spawn-gantry.js';
import { checkWorld, worldConfig, type World } from './support/upgrade-world.js';
import { newId } from '../src/domain/ids.js';
import { dropSchema } from '../src/store/database.js';
import { MIGRATIONS } from '../src/store/migrations/index.js';
import { SecretBox } from '../src/store/secret-box.js';

const FIXTURE = join(import.meta.dirname, 'fixtures', 'upgrade-v0.1.0');
const worlds = JSON.parse(readFileSync(join(FIXTURE, 'world.json'), 'utf8')) as Record<DialectName, World>;

/** Runs `sql` on the fixture's store as the test found it after the server ran (SQLite file or schema). */
type Query = (sql: string, params: unknown[]) => Promise<Array<Record<string, any>>>;

/** Epoch-ms values from a day before the fixture was made to a month after: its times and deadlines. */
const fixtureTimes = (madeAt: number): [number, number] => [madeAt - 86_400_000, madeAt + 30 * 86_400_000];

/** Moves every integer column's fixture times by `delta` in the SQLite file at `path`. */
function shiftSqlite(path: string, madeAt: number, delta: number): void {
  const db = new SqliteDatabase(path, { fileMustExist: true });
  try {
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      .all() as Array<{ name: string }>;
    for (const { name } of tables)
      for (const column of db.pragma(`table_info("${name}")`) as Array<{ name: string; type: string }>)
        if (column.type.toUpperCase() === 'INTEGER')
          db.prepare(
            `UPDATE "${name}" SET "${column.name}" = "${column.name}" + ? WHERE "${column.name}" BETWEEN ? AND ?`,
          ).run(delta, ...fixtureTimes(madeAt));
  } finally {
    db.close();
  }
}

/** Moves every bigint column's fixture times by `delta` in `schema`. */
async function shiftPostgres(client: pg.Client, schema: string, madeAt: number, delta: number): Promise<void> {
  const { rows } = await client.query<{ table_name: string; column_name: string }>(
    "SELECT c.table_name, c.column_name FROM information_schema.columns c JOIN information_schema.tables t USING (table_schema, table_name) WHERE c.table_schema = $1 AND c.data_type = 'bigint' AND t.table_type = 'BASE TABLE'",
    [schema],
  );
  for (const { table_name: table, column_name: column } of rows)
    await client.query(
      `UPDATE "${schema}"."${table}" SET "${column}" = "${column}" + $1 WHERE "${column}" BETWEEN $2 AND $3`,
      [delta, ...fixtureTimes(madeAt)],
    );
}

/** The fixture's PostgreSQL dump, replayed into `schema` (psql's meta-commands left out). */
async function restoreDump(url: string, schema: string, madeAt: number): Promise<void> {
  const dump = gunzipSync(readFileSync(join(FIXTURE, 'postgres.sql.gz')))
    .toString('utf8')
    .split('\n')
    .filter((line) => !line.startsWith('\\'))
    .join('\n')
    .replaceAll('gantry_v010', schema);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(dump);
    // the dump left the search path empty; the fixture's triggers name their tables unqualified
    await client.query(`SET search_path TO "${schema}"`);
    await shiftPostgres(client, schema, madeAt, Date.now() - madeAt);
  } finally {
    await client.end();
  }
}

for (const { name: dialect, skip } of dialects()) {
  test(
    `a ${dialect} data dir written by v0.1.0 is upgraded in place: every key, pod, template, volume, endpoint, job and host survives and works`,
    { skip },
    async (t) => {
      const dir = mkdtempSync(join(tmpdir(), `gantry-upgrade-${dialect}-`));
      t.after(() => rmSync(dir, { recursive: true, force: true }));
      const dataDir = join(dir, 'data');
      mkdirSync(dataDir, { mode: 0o700 });
      // 0600 as a server writes it (a checkout keeps the fixture's file 0644)
      writeFileSync(join(dataDir, 'secret.key'), readFileSync(join(FIXTURE, 'secret.key')), { mode: 0o600 });
      writeFileSync(join(dir, 'config.json'), worldConfig());
      const env: Record<string, string> = {
        GANTRY_BOOTSTRAP_KEY: '',
        GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT: 'true',
        GANTRY_DATABASE_URL: '',
      };
      let query: Query;
      if (dialect === 'postgres') {
        const url = postgresUrl()!;
        const schema = `t_${newId(12)}`;
        t.after(() => dropSchema(url, schema));
        await restoreDump(url, schema, worlds.postgres.madeAt);
        Object.assign(env, { GANTRY_DATABASE_URL: url, GANTRY_DATABASE_SCHEMA: schema });
        query = async (sql, params) => {
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          try {
            await client.query(`SET search_path TO "${schema}"`);
            let n = 0;
            return (
              await client.query(
                sql.replace(/\?/g, () => `$${++n}`),
                params,
              )
            ).rows;
          } finally {
            await client.end();
          }
        };
      } else {
        writeFileSync(join(dataDir, 'gantry.db'), gunzipSync(readFileSync(join(FIXTURE, 'gantry.db.gz'))), {
          mode: 0o600,
        });
        shiftSqlite(join(dataDir, 'gantry.db'), worlds.sqlite.madeAt, Date.now() - worlds.sqlite.madeAt);
        query = async (sql, params) => {
          const db = new SqliteDatabase(join(dataDir, 'gantry.db'), { readonly: true, fileMustExist: true });
          try {
            return db.prepare(sql).all(...params) as Array<Record<string, any>>;
          } finally {
            db.close();
          }
        };
      }
      const server = await spawnGantry(['--data-dir', dataDir, '--config', join(dir, 'config.json')], env);
      try {
        const world = worlds[dialect];
        await checkWorld(
          server.url,
          world,
          (args) => runGantry([...args, '--data-dir', dataDir], env),
          async () => {
            const [row] = await query('SELECT username_enc, password_enc FROM registries WHERE id = ?', [
              world.registry.id,
            ]);
            const box = SecretBox.fromString(readFileSync(join(dataDir, 'secret.key'), 'utf8'));
            return { username: box.open(row!.username_enc), password: box.open(row!.password_enc) };
          },
        );
        const listed = runGantry(['pods', 'list', '--json'], {
          GANTRY_URL: server.url,
          GANTRY_API_KEY: world.aliceKey,
          GANTRY_PROFILE: '',
          GANTRY_CLI_CONFIG: join(dir, 'no-profile.json'),
        });
        assert.equal(listed.status, 0, listed.stderr);
        assert.deepEqual(
          (JSON.parse(listed.stdout) as Array<{ name: string }>).map((p) => p.name).sort(),
          world.pods.map((p) => p.name).sort(),
          "the CLI lists the old data's pods with the old key",
        );
        const applied = await query('SELECT name FROM gantry_migrations ORDER BY name', []);
        assert.deepEqual(
          applied.map((r) => r.name),
          MIGRATIONS.map((m) => m.key).sort(),
          "every migration of today's list ran on the old data",
        );
      } finally {
        assert.equal(await server.stop(), 0, server.output());
      }
    },
  );
}
