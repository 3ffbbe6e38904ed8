/**
 * A SQLite store's backup: one SQLite file holding the database as it was at one instant (SQLite's
 * online backup, safe while a server writes) and, in a table of its own (`gantry_backup`), the
 * secret key that opens the database's sealed secrets. Written 0600: it holds every secret the
 * data dir does. A restore writes the database and the key into a data dir and drops that table.
 */
import {
  chmodSync,
  closeSync,
  copyFileSync,
  existsSync,
  linkSync,
  openSync,
  renameSync,
  rmSync,
  unlinkSync,
} from 'node:fs';
import SqliteDatabase from 'better-sqlite3';
import { FILE_MODE } from './data-dir-permissions.js';

/** A backup or restore that cannot be done as asked: the message says why and what to do. */
export class BackupRefused extends Error {}

/** The table of a backup file that holds the secret key and where the backup came from. */
const TABLE = 'gantry_backup';

export interface BackupInfo {
  /** The secret key's text as the data dir or configuration held it; null when there was none yet
   * (a server generates one on its first start, before it seals anything). */
  secretKey: string | null;
  /** The version of Gantry that made the backup (`gantry --version`). */
  madeBy: string;
  /** ISO 8601. */
  madeAt: string;
}

const removeWithCompanions = (path: string): void => {
  for (const suffix of ['', '-journal', '-wal', '-shm']) rmSync(path + suffix, { force: true });
};

/**
 * Copies the database at `source` into a new file `target` (refused when it exists unless
 * `force`), with the secret key. The copy is written beside `target` and appears there whole.
 */
export async function backupSqlite(options: {
  source: string;
  target: string;
  force: boolean;
  info: Omit<BackupInfo, 'madeAt'>;
}): Promise<void> {
  const { source, target, force, info } = options;
  if (!existsSync(source)) throw new BackupRefused(`there is no database at ${source}`);
  if (!force && existsSync(target)) throw new BackupRefused(`${target} exists (--force overwrites it)`);
  const partial = `${target}.partial-${process.pid}`;
  // created 0600 before a byte of the database is in it
  try {
    closeSync(openSync(partial, 'wx', FILE_MODE));
  } catch (err) {
    throw new BackupRefused(`cannot write beside ${target}: ${(err as Error).message}`);
  }
  try {
    const db = new SqliteDatabase(source, { fileMustExist: true });
    try {
      db.pragma('busy_timeout = 5000');
      // after the first step, the rest in one: a step that writers interleave with starts over
      await db.backup(partial, { progress: () => 0x7fffffff });
    } finally {
      db.close();
    }
    const out = new SqliteDatabase(partial, { fileMustExist: true });
    try {
      // one self-contained file, with no -wal beside it
      out.pragma('journal_mode = DELETE');
      out.exec(`CREATE TABLE ${TABLE} (secret_key TEXT, made_by TEXT NOT NULL, made_at TEXT NOT NULL)`);
      out
        .prepare(`INSERT INTO ${TABLE} (secret_key, made_by, made_at) VALUES (?, ?, ?)`)
        .run(info.secretKey, info.madeBy, new Date().toISOString());
    } finally {
      out.close();
    }
    chmodSync(partial, FILE_MODE);
    if (force) renameSync(partial, target);
    else {
      // fails if `target` appeared meanwhile: never overwritten without --force
      linkSync(partial, target);
      unlinkSync(partial);
    }
  } catch (err) {
    removeWithCompanions(partial);
    if ((err as NodeJS.ErrnoException).code === 'EEXIST')
      throw new BackupRefused(`${target} exists (--force overwrites it)`);
    throw err;
  }
}

/** What a backup file holds besides the database; refused when `file` is not a Gantry backup. */
export function readBackupInfo(file: string): BackupInfo {
  if (!existsSync(file)) throw new BackupRefused(`there is no file at ${file}`);
  let db: SqliteDatabase.Database;
  try {
    db = new SqliteDatabase(file, { readonly: true, fileMustExist: true });
  } catch {
    throw new BackupRefused(`${file} is not a Gantry backup (not a SQLite file)`);
  }
  try {
    const row = db
      .prepare(`SELECT secret_key AS secretKey, made_by AS madeBy, made_at AS madeAt FROM ${TABLE}`)
      .get() as BackupInfo | undefined;
    if (!row) throw new Error('no row');
    return row;
  } catch {
    throw new BackupRefused(`${file} is not a Gantry backup (it has no ${TABLE} table: made by gantry backup?)`);
  } finally {
    db.close();
  }
}

/**
 * Writes the database of the backup `file` as `target` (a data dir's gantry.db): refused when a
 * database is there unless `force` (the server on it must be stopped). Answers what the backup held.
 */
export function restoreSqlite(options: { file: string; target: string; force: boolean }): BackupInfo {
  const { file, target, force } = options;
  const info = readBackupInfo(file);
  if (!force && existsSync(target))
    throw new BackupRefused(`${target} exists (stop the server on it; --force replaces it)`);
  const partial = `${target}.restoring-${process.pid}`;
  try {
    copyFileSync(file, partial);
    chmodSync(partial, FILE_MODE);
    const db = new SqliteDatabase(partial, { fileMustExist: true });
    try {
      db.exec(`DROP TABLE ${TABLE}`);
      db.pragma('journal_mode = WAL');
    } finally {
      db.close();
    }
    // the old database's log would be replayed over the restored file
    for (const suffix of ['-wal', '-shm', '-journal']) rmSync(target + suffix, { force: true });
    renameSync(partial, target);
  } catch (err) {
    removeWithCompanions(partial);
    throw err;
  }
  return info;
}
