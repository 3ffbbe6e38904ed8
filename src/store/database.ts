import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import {
  CompiledQuery,
  Kysely,
  Migrator,
  PostgresDialect,
  SqliteDialect,
  type Migration,
  type QueryResult,
  type Transaction,
} from 'kysely';
import pg from 'pg';
import { DIR_MODE, FILE_MODE } from './data-dir-permissions.js';
import type { Database } from './schema.js';
import { SqliteCheckpointer, type CheckpointStats } from './sqlite-checkpointer.js';
import { migrationsFor, type MigrationDialect } from './migrations/index.js';

type Dialect = MigrationDialect;

/** What a dialect can do; callers branch on capabilities, never on the dialect's name. */
interface StoreCapabilities {
  /** `SELECT … FOR UPDATE SKIP LOCKED` */
  skipLocked: boolean;
  /** `LISTEN/NOTIFY` across processes */
  listenNotify: boolean;
  /** several connections write at once (otherwise writes serialize on one connection) */
  multipleConnections: boolean;
  /** the engine runs inside this process: a statement costs no round trip, so many small
   * prepared statements beat one large one that must be built and parsed each time */
  inProcess: boolean;
}

export type Executor = Kysely<Database> | Transaction<Database>;

/** Whether `err` is a unique-key violation, on either dialect (a row another writer inserted first). */
export const isUniqueViolation = (err: unknown): boolean => {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '23505' || (typeof code === 'string' && code.startsWith('SQLITE_CONSTRAINT'));
};

/**
 * One connection of its own, outside the pool, for state that lives as long as a session:
 * advisory locks (leases) and `LISTEN`. Queries run one at a time, in call order.
 */
export interface Session {
  /** The server process serving this session (`pg_backend_pid()`). */
  readonly pid: number;
  query<R = Record<string, unknown>>(text: string, values?: readonly unknown[]): Promise<R[]>;
  /** Notifications of the channels this session listens on. */
  onNotification(listener: (channel: string, payload: string) => void): void;
  /** Called once when the connection ends for any reason: an error, the server closing it, `close()`. */
  onClose(listener: (err?: Error) => void): void;
  close(): Promise<void>;
}

/** Opens sessions; present where `capabilities.listenNotify`. */
export interface Sessions {
  /** Tells apart deployments sharing one server (the PostgreSQL schema): lock keys and channels derive from it. */
  readonly namespace: string;
  open(): Promise<Session>;
}

export interface Db {
  readonly dialect: Dialect;
  readonly kysely: Kysely<Database>;
  readonly capabilities: StoreCapabilities;
  /** Run `fn` in one transaction; it commits when `fn` resolves and rolls back when it throws. */
  withTransaction<T>(fn: (tx: Transaction<Database>) => Promise<T>): Promise<T>;
  /** Dedicated connections, where the dialect has session state worth holding (PostgreSQL). */
  readonly sessions?: Sessions;
  /**
   * In-process engines only (SQLite): runs `fn` synchronously in ONE transaction on the raw
   * connection, while holding that connection so no Kysely query or transaction interleaves.
   * For the hottest batch writes, whose per-row cost is otherwise Kysely's promise chain: a
   * prepared statement rebound per row, with no await between rows. `raw.prepare` answers from
   * the statement cache Kysely uses, so callers prepare by SQL text on every call.
   */
  readonly syncTransaction?: <T>(fn: (raw: SqliteDatabase.Database) => T) => Promise<T>;
  /**
   * In-process engines only (SQLite): runs `fn` synchronously on the raw connection, outside any
   * transaction, while holding the connection (so it never sees another caller's uncommitted
   * writes). For the hottest point reads.
   */
  readonly syncRead?: <T>(fn: (raw: SqliteDatabase.Database) => T) => Promise<T>;
  /** SQLite files: what the background checkpointer has done (see `sqlite-checkpointer.ts`). */
  readonly checkpoints?: CheckpointStats;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** `postgres://…`, or null for SQLite in `dataDir`. */
  url: string | null;
  dataDir: string;
  /** PostgreSQL schema (created when missing). @default "public" */
  schema?: string;
  /** SQLite file name inside dataDir; `:memory:` for a private in-memory database. @default "gantry.db" */
  sqliteFile?: string;
}

// int8 columns hold epoch milliseconds, well inside Number's exact range.
pg.types.setTypeParser(20, (v: string) => Number(v));

export async function openDatabase(options: OpenDatabaseOptions): Promise<Db> {
  if (!options.url) {
    const db = openSqlite(options);
    await migrate(db.kysely, migrationsFor('sqlite'));
    return db;
  }
  const schema = options.schema ?? 'public';
  const db = await openPostgres(options.url, schema);
  try {
    await withSchemaChangeLock(options.url, () => migrate(db.kysely, migrationsFor('postgres'), schema));
  } catch (err) {
    await db.close();
    throw err;
  }
  return db;
}

/** Advisory-lock key (single bigint form, apart from the leases' int4 pairs) of schema changes. */
const SCHEMA_CHANGE_LOCK = 0x67616e747279n; // "gantry"

/**
 * Runs `fn` holding the database-wide schema-change lock. Migrations introspect every schema of
 * the database (Kysely's migrator lists all tables), and a schema dropped meanwhile by another
 * process makes that listing fail with "schema … does not exist": migrating and dropping a schema
 * (`dropSchema`) take this lock, so replicas starting together or test runs sharing a database
 * never collide.
 */
export async function withSchemaChangeLock<T>(url: string, fn: () => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1::bigint)', [SCHEMA_CHANGE_LOCK.toString()]);
    return await fn();
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Drops a schema and everything in it, under the schema-change lock. */
export async function dropSchema(url: string, schema: string): Promise<void> {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`Invalid PostgreSQL schema name "${schema}"`);
  await withSchemaChangeLock(url, async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    } finally {
      await client.end();
    }
  });
}

function openSqlite(options: OpenDatabaseOptions): Db {
  const file = options.sqliteFile ?? 'gantry.db';
  let path = file;
  if (file !== ':memory:') {
    mkdirSync(options.dataDir, { recursive: true, mode: DIR_MODE });
    path = join(options.dataDir, file);
    // SQLite creates the -wal and -shm files with the database file's mode: create it 0600 first.
    closeSync(openSync(path, 'a', FILE_MODE));
  }
  const sqlite = new SqliteDatabase(path);
  sqlite.pragma('journal_mode = WAL');
  // WAL + NORMAL: a committed transaction survives a crash of this process (kill -9); only an OS
  // crash or power loss can lose the last commits.
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  // The background checkpointer copies the WAL back as it grows; this connection's own automatic
  // checkpoint, every ~40 MB of log, is the backstop that lets the log start over. Reads go
  // through SQLite's own page cache (32 MB), not a memory map: with a map, every page a scan
  // touched counted as the server's resident memory (410 MB after one exact count over a million
  // queued jobs, against 166 MB without), for no measurable gain on the hot paths.
  sqlite.pragma('wal_autocheckpoint = 10000');
  sqlite.pragma('cache_size = -32000');
  // Kysely and the synchronous hot paths share one cache of prepared statements.
  const cached = withStatementCache(sqlite);
  const kysely = new Kysely<Database>({ dialect: new SqliteDialect({ database: cached }) });
  const checkpointer = file === ':memory:' ? null : new SqliteCheckpointer(path);
  return {
    dialect: 'sqlite',
    kysely,
    capabilities: { skipLocked: false, listenNotify: false, multipleConnections: false, inProcess: true },
    withTransaction: (fn) => kysely.transaction().execute(fn),
    // Kysely's SQLite driver hands its one connection out under a mutex, so while this callback
    // runs no Kysely transaction is open: BEGIN here cannot nest into someone else's.
    syncTransaction: (fn) => kysely.connection().execute(async () => sqlite.transaction(() => fn(cached))()),
    syncRead: (fn) => kysely.connection().execute(async () => fn(cached)),
    ...(checkpointer ? { checkpoints: checkpointer.stats } : {}),
    close: async () => {
      await checkpointer?.stop();
      await kysely.destroy();
    },
  };
}

/**
 * Kysely prepares a statement for every query; preparing costs more than running a point read.
 * Statements are reused per SQL text (Kysely runs each to completion synchronously, so one
 * prepared statement is never used by two queries at once).
 */
function withStatementCache(sqlite: SqliteDatabase.Database): SqliteDatabase.Database {
  const cache = new Map<string, SqliteDatabase.Statement>();
  const MAX = 500;
  return new Proxy(sqlite, {
    get(target, prop, receiver) {
      if (prop !== 'prepare') return Reflect.get(target, prop, receiver) as unknown;
      return (sql: string) => {
        let stmt = cache.get(sql);
        if (!stmt) {
          if (cache.size >= MAX) cache.clear();
          stmt = target.prepare(sql);
          cache.set(sql, stmt);
        }
        return stmt;
      };
    },
  });
}

async function openPostgres(url: string, schema: string): Promise<Db> {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`Invalid PostgreSQL schema name "${schema}"`);
  const setup = new pg.Client({ connectionString: url });
  await setup.connect();
  try {
    await setup.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  } finally {
    await setup.end();
  }
  const pool = new pg.Pool({ connectionString: url, max: 10, options: `-c search_path=${schema}` });
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    dialect: 'postgres',
    kysely,
    capabilities: { skipLocked: true, listenNotify: true, multipleConnections: true, inProcess: false },
    withTransaction: (fn) => kysely.transaction().execute(fn),
    sessions: { namespace: schema, open: () => openSession(url, schema) },
    close: () => kysely.destroy(),
  };
}

/** A query on a session that takes longer than this counts as a dead connection. */
const SESSION_QUERY_TIMEOUT_MS = 10_000;

async function openSession(url: string, schema: string): Promise<Session> {
  // keepAlive: a peer that vanished without closing the socket is noticed by TCP, not only by the next query.
  const client = new pg.Client({
    connectionString: url,
    options: `-c search_path=${schema}`,
    keepAlive: true,
    query_timeout: SESSION_QUERY_TIMEOUT_MS,
  });
  const closeListeners: Array<(err?: Error) => void> = [];
  let ended = false;
  let endError: Error | undefined;
  const markEnded = (err?: Error): void => {
    if (ended) return;
    ended = true;
    endError = err;
    for (const listener of closeListeners.splice(0)) listener(err);
  };
  // Without an 'error' listener a dropped connection would crash the process.
  client.on('error', (err) => markEnded(err));
  client.on('end', () => markEnded());
  await client.connect();
  let pid: number;
  try {
    pid = Number((await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid);
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  return {
    pid,
    query: async <R>(text: string, values?: readonly unknown[]) =>
      (await client.query(text, values ? [...values] : undefined)).rows as R[],
    onNotification: (listener) => void client.on('notification', (m) => listener(m.channel, m.payload ?? '')),
    onClose: (listener) => {
      if (ended) queueMicrotask(() => listener(endError));
      else closeListeners.push(listener);
    },
    close: async () => {
      markEnded();
      await client.end().catch(() => undefined);
    },
  };
}

async function migrate(
  kysely: Kysely<Database>,
  migrations: Record<string, Migration>,
  schema?: string,
): Promise<void> {
  const migrator = new Migrator({
    db: kysely,
    provider: { getMigrations: async () => migrations },
    migrationTableName: 'gantry_migrations',
    migrationLockTableName: 'gantry_migrations_lock',
    // Without it Kysely finds the migration tables of any schema in the database and skips creating ours.
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(
      `Database migration ${failed?.migrationName ?? ''} failed: ${error instanceof Error ? error.message : JSON.stringify(error)}`,
    );
  }
}

export const toJson = (value: unknown): string => JSON.stringify(value);
export const fromJson = <T>(text: string | null | undefined, fallback: T): T => {
  if (text === null || text === undefined || text === '') return fallback;
  return JSON.parse(text) as T;
};

/**
 * Hot statements compiled once per shape. Building and compiling a Kysely query costs more than
 * SQLite takes to run a point write, so a store's hottest writes compile the first time a shape
 * (its columns, in order) is seen and afterwards only rebind values. The caller passes the values
 * in the order the built query binds them; a mismatch is detected once and the built query runs.
 */
export class ShapedStatements {
  readonly #sql = new Map<string, string>();

  run(
    tx: Executor,
    shape: string,
    build: () => { compile(): CompiledQuery },
    params: readonly unknown[],
  ): Promise<QueryResult<unknown>> {
    let text = this.#sql.get(shape);
    if (text === undefined) {
      const compiled = build().compile();
      if (compiled.parameters.length !== params.length) return tx.executeQuery(compiled);
      text = compiled.sql;
      this.#sql.set(shape, text);
    }
    return tx.executeQuery(CompiledQuery.raw(text, [...params]));
  }
}
