/**
 * Regenerates test/fixtures/upgrade-v0.1.0/: a data dir written by Gantry v0.1.0, on SQLite and on
 * PostgreSQL, holding one of every kind of object (test/support/upgrade-world.ts), for
 * test/upgrade-v0.1.0.test.ts. Run by hand, not by CI:
 *
 *   git worktree add /tmp/v010 v0.1.0 && (cd /tmp/v010 && npm ci)
 *   node --import tsx scripts/make-upgrade-fixture.ts /tmp/v010 [--postgres postgres://postgres@127.0.0.1:5432/postgres]
 *   git worktree remove --force /tmp/v010
 *
 * It runs v0.1.0's own `gantry serve` and CLI (process runtime) on a fresh data dir, and on a
 * database it creates on the PostgreSQL server (`gantry_v010_fixture`, dropped afterwards), and
 * writes:
 *   gantry.db.gz      the SQLite database (vacuumed, gzipped)
 *   postgres.sql.gz   pg_dump --inserts of the schema `gantry_v010` (plain SQL, gzipped)
 *   secret.key        the secret key both data dirs used (a test value: it guards only this fixture)
 *   world.json        what was made, per store: ids, keys and the registry credential's secrets
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { SecretBox } from '../src/store/secret-box.js';
import { spawnGantry } from '../test/support/spawn-gantry.js';
import { populateWorld, worldConfig, type World } from '../test/support/upgrade-world.js';

const { values, positionals } = parseArgs({
  options: { postgres: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' } },
  allowPositionals: true,
});
if (positionals.length !== 1) {
  console.error('usage: node --import tsx scripts/make-upgrade-fixture.ts V0.1.0_CHECKOUT [--postgres URL]');
  process.exit(2);
}
const old = resolve(positionals[0]!);
const oldBin = join(old, 'bin', 'gantry.js');
const out = join(import.meta.dirname, '..', 'test', 'fixtures', 'upgrade-v0.1.0');
const ADMIN_KEY = 'gantry-v010-fixture-admin-key-0123456789';
/** The schema the PostgreSQL fixture lives in: the test renames it to one of its own. */
const SCHEMA = 'gantry_v010';
const DATABASE = 'gantry_v010_fixture';
const secretKey = SecretBox.generateKey();

const version = spawnSync(process.execPath, [oldBin, '--help'], { encoding: 'utf8' });
if (version.status !== 0) throw new Error(`${oldBin} does not run: ${version.stderr}`);

async function makeWorld(dbEnv: Record<string, string>): Promise<{ world: World; dataDir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-v010-fixture-'));
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir, { mode: 0o700 });
  writeFileSync(join(dataDir, 'secret.key'), secretKey + '\n', { mode: 0o600 });
  writeFileSync(join(dir, 'config.json'), worldConfig());
  const env = {
    ...dbEnv,
    GANTRY_BOOTSTRAP_KEY: ADMIN_KEY,
    GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT: 'true',
    GANTRY_LOG_LEVEL: 'warn',
  };
  const server = await spawnGantry(['--data-dir', dataDir, '--config', join(dir, 'config.json')], env, 60_000, {
    command: [oldBin, 'serve', '--port', '0'],
  });
  try {
    const world = await populateWorld(server.url, ADMIN_KEY, (args) => {
      const r = spawnSync(process.execPath, [oldBin, ...args, '--data-dir', dataDir], {
        env: { ...process.env, ...env },
        encoding: 'utf8',
      });
      return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    });
    return { world, dataDir };
  } finally {
    const code = await server.stop();
    if (code !== 0) console.error(`v0.1.0 exited with ${code}:\n${server.output()}`);
  }
}

mkdirSync(out, { recursive: true });
const worlds: Record<string, World> = {};

// SQLite
{
  const { world, dataDir } = await makeWorld({});
  const vacuumed = join(dataDir, 'vacuumed.db');
  const db = new SqliteDatabase(join(dataDir, 'gantry.db'), { fileMustExist: true });
  db.exec(`VACUUM INTO '${vacuumed}'`);
  db.close();
  writeFileSync(join(out, 'gantry.db.gz'), gzipSync(readFileSync(vacuumed), { level: 9 }));
  rmSync(join(dataDir, '..'), { recursive: true, force: true });
  worlds.sqlite = world;
}

// PostgreSQL: a database of the fixture's own, dumped as plain SQL (INSERTs: no COPY blocks, so a
// client library can replay it)
{
  const admin = new pg.Client({ connectionString: values.postgres });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${DATABASE}`);
  await admin.query(`CREATE DATABASE ${DATABASE}`);
  const url = new URL(values.postgres);
  url.pathname = `/${DATABASE}`;
  try {
    const { world, dataDir } = await makeWorld({
      GANTRY_DATABASE_URL: url.toString(),
      GANTRY_DATABASE_SCHEMA: SCHEMA,
    });
    rmSync(join(dataDir, '..'), { recursive: true, force: true });
    const dump = spawnSync(
      'pg_dump',
      ['--inserts', '--no-owner', '--no-privileges', '--schema', SCHEMA, '--dbname', url.toString()],
      { encoding: 'utf8', maxBuffer: 64 << 20 },
    );
    if (dump.status !== 0) throw new Error(`pg_dump: ${dump.stderr}`);
    writeFileSync(join(out, 'postgres.sql.gz'), gzipSync(dump.stdout, { level: 9 }));
    worlds.postgres = world;
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
    await admin.end();
  }
}

writeFileSync(join(out, 'secret.key'), secretKey + '\n', { mode: 0o600 });
writeFileSync(join(out, 'world.json'), JSON.stringify(worlds, null, 2) + '\n');
console.log(`wrote ${out}`);
