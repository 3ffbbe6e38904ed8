/**
 * `gantry backup` and `gantry restore`: a backup taken from a running server on SQLite while it
 * writes, restored into a fresh data dir, serves every object (test/support/upgrade-world.ts) with
 * its sealed secrets; the backup file is 0600 and never overwritten unless asked; PostgreSQL
 * stores are pointed to pg_dump. Real processes: the built CLI and `gantry serve`.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { postgresUrl } from './support/harness.js';
import { runGantry, spawnGantry, type SpawnedGantry } from './support/spawn-gantry.js';
import { api, checkWorld, populateWorld, worldConfig } from './support/upgrade-world.js';
import { newId } from '../src/domain/ids.js';
import { dropSchema } from '../src/store/database.js';
import { SecretBox } from '../src/store/secret-box.js';

const dir = mkdtempSync(join(tmpdir(), 'gantry-backup-'));
const servers: SpawnedGantry[] = [];
after(async () => {
  for (const s of servers) await s.stop();
  rmSync(dir, { recursive: true, force: true });
});

const ADMIN_KEY = 'gantry-backup-test-admin-key-0123456789';
const env = { GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT: 'true', GANTRY_DATABASE_URL: '' };
const config = join(dir, 'config.json');
writeFileSync(config, worldConfig());

const serve = async (dataDir: string): Promise<SpawnedGantry> => {
  const server = await spawnGantry(['--data-dir', dataDir, '--config', config], {
    ...env,
    GANTRY_BOOTSTRAP_KEY: ADMIN_KEY,
  });
  servers.push(server);
  return server;
};

test('a backup of a running server, restored into a fresh data dir, serves every object, and its sealed secrets open', async () => {
  const source = join(dir, 'source');
  const server = await serve(source);
  const gantry = (dataDir: string) => (args: string[]) => runGantry([...args, '--data-dir', dataDir], env);
  const world = await populateWorld(server.url, ADMIN_KEY, gantry(source));

  // the server keeps writing while the backup is taken
  let writing = true;
  const writes = (async () => {
    let n = 0;
    while (writing)
      await api(server.url, world.aliceKey, 'POST', `/v2/${world.endpoint.id}/run`, { input: { n: n++ } });
    return n;
  })();
  const file = join(dir, 'gantry-backup.db');
  const made = runGantry(['backup', file, '--data-dir', source], env);
  writing = false;
  assert.ok((await writes) > 0);
  assert.equal(made.status, 0, made.stderr);
  assert.equal(statSync(file).mode & 0o777, 0o600, 'the backup is readable by its owner only');
  const key = readFileSync(join(source, 'secret.key'), 'utf8').trim();
  assert.ok(!made.stdout.includes(key) && !made.stderr.includes(key), 'the key is not printed');
  const copy = new SqliteDatabase(file, { readonly: true });
  assert.equal(copy.pragma('integrity_check', { simple: true }), 'ok', 'the copy taken during writes is consistent');
  copy.close();

  const restoredDir = join(dir, 'restored');
  const restored = runGantry(['restore', file, '--data-dir', restoredDir], env);
  assert.equal(restored.status, 0, restored.stderr);
  assert.equal(readFileSync(join(restoredDir, 'secret.key'), 'utf8').trim(), key, 'the secret key is restored');
  assert.equal(statSync(join(restoredDir, 'secret.key')).mode & 0o777, 0o600);
  assert.equal(statSync(join(restoredDir, 'gantry.db')).mode & 0o777, 0o600);
  await server.stop();

  // the jobs posted during the backup queue after the world's: a worker takes the world's first
  const second = await serve(restoredDir);
  await checkWorld(second.url, world, gantry(restoredDir), async () => {
    const db = new SqliteDatabase(join(restoredDir, 'gantry.db'), { readonly: true });
    try {
      const row = db
        .prepare('SELECT username_enc, password_enc FROM registries WHERE id = ?')
        .get(world.registry.id) as {
        username_enc: string;
        password_enc: string;
      };
      const box = SecretBox.fromString(key);
      return { username: box.open(row.username_enc), password: box.open(row.password_enc) };
    } finally {
      db.close();
    }
  });
  assert.equal(await second.stop(), 0, second.output());

  const again = runGantry(['backup', file, '--data-dir', restoredDir], env);
  assert.equal(again.status, 2, 'an existing backup is not overwritten');
  assert.match(again.stderr, /exists \(--force overwrites it\)/);
  const onto = runGantry(['restore', file, '--data-dir', restoredDir], env);
  assert.equal(onto.status, 2, 'a data dir holding a database is not restored over');
  assert.equal(runGantry(['backup', file, '--force', '--data-dir', restoredDir], env).status, 0);
  assert.equal(statSync(file).mode & 0o777, 0o600);
});

test('a backup of a PostgreSQL store exits 2 naming the pg_dump command, without the password', () => {
  const r = runGantry(['backup', join(dir, 'pg-backup'), '--data-dir', join(dir, 'pg')], {
    GANTRY_DATABASE_URL: 'postgres://gantry:s3cret-pw@db.example:5432/gantry',
  });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /pg_dump --format=custom --file FILE 'postgres:\/\/gantry@db\.example:5432\/gantry'/);
  assert.ok(!r.stderr.includes('s3cret-pw'), 'the password is not printed');
});

test('a file that is not a Gantry backup is refused by restore and nothing is written', () => {
  const bogus = join(dir, 'not-a-backup');
  writeFileSync(bogus, 'hello');
  const r = runGantry(['restore', bogus, '--data-dir', join(dir, 'bogus-restore')], env);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /not a Gantry backup/);
  assert.throws(() => statSync(join(dir, 'bogus-restore', 'gantry.db')));
});

const pgTools = spawnSync('pg_restore', ['--version']).status === 0;

test(
  "a PostgreSQL store dumped with deploy.md's pg_dump while it runs and restored with its pg_restore into a fresh database serves every object, with the data dir's key",
  {
    skip: !postgresUrl()
      ? 'GANTRY_TEST_DATABASE_URL is not set'
      : !pgTools
        ? 'pg_dump/pg_restore are not installed'
        : false,
  },
  async () => {
    const url = postgresUrl()!;
    const schema = `t_${newId(12)}`;
    const database = `gantry_restore_${newId(12).toLowerCase()}`;
    const restoredUrl = Object.assign(new URL(url), { pathname: `/${database}` }).toString();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const pgEnv = { GANTRY_DATABASE_URL: url, GANTRY_DATABASE_SCHEMA: schema };
      const sourceDir = join(dir, 'pg-source');
      const server = await spawnGantry(['--data-dir', sourceDir, '--config', config], {
        ...env,
        ...pgEnv,
        GANTRY_BOOTSTRAP_KEY: ADMIN_KEY,
      });
      servers.push(server);
      const world = await populateWorld(server.url, ADMIN_KEY, (args) =>
        runGantry([...args, '--data-dir', sourceDir], { ...env, ...pgEnv }),
      );
      const dump = join(dir, 'gantry.dump');
      const dumped = spawnSync('pg_dump', ['--format=custom', '--file', dump, '--schema', schema, url], {
        encoding: 'utf8',
      });
      assert.equal(dumped.status, 0, dumped.stderr);
      assert.equal(await server.stop(), 0, server.output());

      await admin.query(`CREATE DATABASE ${database}`);
      const restored = spawnSync('pg_restore', ['--no-owner', '--dbname', restoredUrl, dump], { encoding: 'utf8' });
      assert.equal(restored.status, 0, restored.stderr);
      const restoredDir = join(dir, 'pg-restored');
      mkdirSync(restoredDir, { mode: 0o700 });
      copyFileSync(join(sourceDir, 'secret.key'), join(restoredDir, 'secret.key'));
      const restoredEnv = { ...env, GANTRY_DATABASE_URL: restoredUrl, GANTRY_DATABASE_SCHEMA: schema };
      const second = await spawnGantry(['--data-dir', restoredDir, '--config', config], restoredEnv);
      servers.push(second);
      await checkWorld(
        second.url,
        world,
        (args) => runGantry([...args, '--data-dir', restoredDir], restoredEnv),
        async () => {
          const client = new pg.Client({ connectionString: restoredUrl });
          await client.connect();
          try {
            const { rows } = await client.query<{ username_enc: string; password_enc: string }>(
              `SELECT username_enc, password_enc FROM "${schema}".registries WHERE id = $1`,
              [world.registry.id],
            );
            const box = SecretBox.fromString(readFileSync(join(restoredDir, 'secret.key'), 'utf8'));
            return { username: box.open(rows[0]!.username_enc), password: box.open(rows[0]!.password_enc) };
          } finally {
            await client.end();
          }
        },
      );
      assert.equal(await second.stop(), 0, second.output());
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.end();
      await dropSchema(url, schema);
    }
  },
);
