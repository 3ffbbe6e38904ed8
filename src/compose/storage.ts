import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { openDatabase, type Db } from '../store/database.js';
import { DIR_MODE, tightenDataDir } from '../store/data-dir-permissions.js';
import { SecretBox } from '../store/secret-box.js';
import { LocalLeases, PostgresLeases, type Leases } from '../store/leases.js';
import { PostgresNotifyRelay } from '../store/notify-relay.js';
import { JobSignals } from '../jobs/job-signals.js';
import { createStores, type Stores } from '../stores.js';

/** Reads the secret key from the config, or from `<dataDir>/secret.key`, creating it on first start. */
export function loadSecretBox(config: Config, logger: Logger): SecretBox {
  if (config.secretKey) return SecretBox.fromString(config.secretKey);
  const path = join(config.dataDir, 'secret.key');
  if (!existsSync(path)) {
    mkdirSync(config.dataDir, { recursive: true, mode: DIR_MODE });
    writeFileSync(path, SecretBox.generateKey() + '\n', { mode: 0o600 });
    chmodSync(path, 0o600);
    if (config.databaseUrl)
      logger.warn(
        { path },
        'generated a secret key in the data dir; replicas sharing this database must share it via GANTRY_SECRET_KEY',
      );
  }
  return SecretBox.fromString(readFileSync(path, 'utf8'));
}

export const openConfiguredDatabase = (config: Config): Promise<Db> =>
  openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, schema: config.databaseSchema });

/** Before the database opens: SQLite gives new -wal/-shm files the database file's mode. */
export function tightenData(config: Config, logger: Logger): void {
  const tightened = tightenDataDir(config.dataDir);
  if (tightened.length > 0)
    logger.warn(
      { dataDir: config.dataDir, paths: tightened.slice(0, 50), count: tightened.length },
      `took group and other permissions off ${tightened.length} path(s) of the data dir: it holds secrets no other local user may read`,
    );
}

export interface Storage {
  db: Db;
  stores: Stores;
  leases: Leases;
  relay: PostgresNotifyRelay | null;
  signals: JobSignals;
  secrets: SecretBox;
}

/** The storage area: the database, each store once, and what replicas sharing PostgreSQL coordinate with. */
export function assembleStorage(config: Config, db: Db, logger: Logger): Storage {
  // Each store once, handed to the services that use it.
  const stores = createStores(db);
  // Replicas sharing one PostgreSQL database: each control loop runs under a lease, and long-polls
  // are woken across replicas (DESIGN "Scale-out"). Connected by startServer.
  const sessions = db.capabilities.listenNotify ? db.sessions : undefined;
  const leases: Leases = sessions
    ? new PostgresLeases({ sessions, logger: logger.child({ component: 'leases' }) })
    : new LocalLeases();
  const relay = sessions ? new PostgresNotifyRelay({ sessions, logger: logger.child({ component: 'relay' }) }) : null;
  const signals = new JobSignals(relay ? { onLocal: relay.publish } : {});
  const secrets = loadSecretBox(config, logger);
  return { db, stores, leases, relay, signals, secrets };
}
