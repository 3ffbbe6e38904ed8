import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Config } from '../config.js';
import { DIR_MODE, FILE_MODE } from '../store/data-dir-permissions.js';
import { SecretBox } from '../store/secret-box.js';
import { backupSqlite, BackupRefused, readBackupInfo, restoreSqlite } from '../store/sqlite-backup.js';
import { parseArgs, configFrom, storeOptions, UsageError } from './args.js';
import { versionText } from './version.js';

export const backupHelp = `gantry backup FILE [--force]     copies the SQLite store and the secret key into FILE (0600),
                                safe while the server runs; refuses an existing FILE unless --force
                                (PostgreSQL: says the pg_dump command to use, exit 2)
gantry restore FILE [--force]    writes a backup into the data dir (gantry.db and secret.key), the
                                server stopped; refuses a data dir holding a database unless --force`;

/** The database URL without its password, for a command printed to the operator. */
function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = '';
    return parsed.toString();
  } catch {
    return 'postgres://USER@HOST:5432/DATABASE';
  }
}

/** What an operator runs instead of `gantry backup`/`restore` when the store is PostgreSQL. */
function postgresRefusal(config: Config, action: 'backup' | 'restore'): UsageError {
  const url = withoutPassword(config.databaseUrl!);
  const schema = config.databaseSchema === 'public' ? '' : ` --schema '${config.databaseSchema}'`;
  const command =
    action === 'backup'
      ? `pg_dump --format=custom${schema} --file FILE '${url}'`
      : `pg_restore --no-owner --dbname '${url}' FILE   (into an empty database)`;
  return new UsageError(
    `the store is PostgreSQL: gantry ${action} copies SQLite stores only. Use\n  ${command}\n` +
      `and keep the secret key (GANTRY_SECRET_KEY, or ${join(config.dataDir, 'secret.key')}) with it: docs/deploy.md, "Backups"`,
  );
}

/** The secret key's text the server on this configuration uses; null before a server made one. */
function secretKeyText(config: Config): string | null {
  if (config.secretKey) return config.secretKey.trim();
  const path = join(config.dataDir, 'secret.key');
  return existsSync(path) ? readFileSync(path, 'utf8').trim() : null;
}

/** Whether two secret keys' texts (hex or base64) are the same key. */
function sameKey(a: string, b: string): boolean {
  try {
    return SecretBox.fromString(a).open(SecretBox.fromString(b).seal('same key?')) === 'same key?';
  } catch {
    return false;
  }
}

function parse(argv: string[], name: string): { file: string; force: boolean; config: Config } | null {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { ...storeOptions, force: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) return null;
  if (positionals.length !== 1) throw new UsageError(`usage: gantry ${name} FILE [--force]`);
  return { file: resolve(positionals[0]!), force: values.force === true, config: configFrom(values) };
}

export async function backup(argv: string[]): Promise<void> {
  const parsed = parse(argv, 'backup');
  if (!parsed) return void console.log(backupHelp);
  const { file, force, config } = parsed;
  if (config.databaseUrl) throw postgresRefusal(config, 'backup');
  try {
    await backupSqlite({
      source: join(config.dataDir, 'gantry.db'),
      target: file,
      force,
      info: { secretKey: secretKeyText(config), madeBy: versionText() },
    });
  } catch (err) {
    throw err instanceof BackupRefused ? new UsageError(err.message) : err;
  }
  console.log(`backed up ${config.dataDir} to ${file} (the database and the secret key: keep it as you keep the key)`);
}

export async function restore(argv: string[]): Promise<void> {
  const parsed = parse(argv, 'restore');
  if (!parsed) return void console.log(backupHelp);
  const { file, force, config } = parsed;
  if (config.databaseUrl) throw postgresRefusal(config, 'restore');
  try {
    const { secretKey } = readBackupInfo(file);
    const keyPath = join(config.dataDir, 'secret.key');
    if (config.secretKey && secretKey && !sameKey(config.secretKey, secretKey))
      throw new BackupRefused(
        "the configured secret key (GANTRY_SECRET_KEY / secretKey) is not the backup's: its sealed secrets would not open",
      );
    if (
      secretKey &&
      !config.secretKey &&
      !force &&
      existsSync(keyPath) &&
      !sameKey(readFileSync(keyPath, 'utf8'), secretKey)
    )
      throw new BackupRefused(`${keyPath} holds another secret key (--force replaces it)`);
    mkdirSync(config.dataDir, { recursive: true, mode: DIR_MODE });
    const info = restoreSqlite({ file, target: join(config.dataDir, 'gantry.db'), force });
    if (info.secretKey && !config.secretKey) writeFileSync(keyPath, info.secretKey + '\n', { mode: FILE_MODE });
    console.log(`restored ${file} (made by ${info.madeBy} at ${info.madeAt}) into ${config.dataDir}`);
  } catch (err) {
    throw err instanceof BackupRefused ? new UsageError(err.message) : err;
  }
}
