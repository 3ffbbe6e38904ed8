import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { loadConfig, type Config } from '../../src/config.js';
import { FakeClock, type Clock } from '../../src/domain/clock.js';
import { dropSchema, openDatabase, type Db } from '../../src/store/database.js';
import { createServices, bootstrapAdmin, startServer, type RunningServer } from '../../src/main.js';
import { buildApp } from '../../src/http/app.js';
import type { ResponseMismatch } from '../../src/http/response-check.js';
import type { Services } from '../../src/services.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { ResolveAddresses } from '../../src/runtime/registry-guard.js';
import type { Host } from '../../src/domain/catalog.js';
import { newId } from '../../src/domain/ids.js';
import { freePort } from '../../src/runtime/runtime-contract.js';

export type DialectName = 'sqlite' | 'postgres';

/** The PostgreSQL URL for tests, or null (then PostgreSQL suites skip, saying so). */
export const postgresUrl = (): string | null => process.env.GANTRY_TEST_DATABASE_URL ?? null;

/** Dialects to run contract suites on: SQLite always, PostgreSQL when configured. */
export const dialects = (): Array<{ name: DialectName; skip: string | false }> => [
  { name: 'sqlite', skip: false },
  { name: 'postgres', skip: postgresUrl() ? false : 'GANTRY_TEST_DATABASE_URL is not set' },
];

export interface TestDb {
  db: Db;
  dataDir: string;
  url: string | null;
  schema: string;
  cleanup(): Promise<void>;
}

/** A private database: a SQLite file in a temp folder, or a fresh PostgreSQL schema dropped afterwards. */
export async function openTestDb(dialect: DialectName = 'sqlite'): Promise<TestDb> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gantry-test-'));
  const url = dialect === 'postgres' ? postgresUrl() : null;
  if (dialect === 'postgres' && !url) throw new Error('GANTRY_TEST_DATABASE_URL is not set');
  const schema = dialect === 'postgres' ? `t_${newId(12)}` : 'public';
  const db = await openDatabase({ url, dataDir, schema });
  return {
    db,
    dataDir,
    url,
    schema,
    async cleanup() {
      await db.close();
      if (url) await dropSchema(url, schema);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Tests play several tenants against one server on purpose (the tenant matrix, fuzzers): they opt
 * in to several accounts on the process runtime and on a Docker runtime whose workers use the host
 * network (a loopback job URL, as every test server has), which a real deployment refuses unless
 * its operator does (runtime/account-isolation.ts). A test of that refusal overrides it through `env`.
 */
const MULTI_ACCOUNT = {
  GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT: 'true',
  GANTRY_DOCKER_HOST_NETWORK_MULTI_ACCOUNT: 'true',
} as const;

export interface TestAppOptions {
  dialect?: DialectName;
  /** Raw config file content, merged over the defaults. */
  file?: Record<string, unknown>;
  clock?: Clock;
  runtime?: Runtime;
  /** The hosts placement uses with `runtime` (required with runtime docker). @default the config's fleet */
  hosts?: Host[];
  /** How registry host names resolve (runtime docker). @default the system resolver */
  registryResolver?: ResolveAddresses;
  env?: Record<string, string>;
  /** A test of the response check itself: mismatches do not fail `close()`. @default false */
  allowResponseMismatches?: boolean;
  /** Where the built web console is (routes/console.ts). @default dist/console */
  consoleDir?: string;
}

export interface TestApp {
  app: FastifyInstance;
  services: Services;
  config: Config;
  clock: Clock;
  /** The first-start admin key (write scope). */
  adminKey: string;
  /** Creates an account with a write key (and a read key); answers both keys. */
  newAccount(name?: string): Promise<{ accountId: string; key: string; readKey: string }>;
  /** `app.inject` with `Authorization: Bearer <key>` and JSON body handling. */
  request(
    key: string | null,
    method: InjectOptions['method'],
    url: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/** Builds services + app over a private database, without listening. */
export async function createTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const testDb = await openTestDb(options.dialect ?? 'sqlite');
  const { writeFileSync } = await import('node:fs');
  const configPath = join(testDb.dataDir, 'config.json');
  writeFileSync(configPath, JSON.stringify(options.file ?? {}));
  const config = loadConfig({
    env: {
      GANTRY_DATA_DIR: testDb.dataDir,
      GANTRY_CONFIG: configPath,
      GANTRY_LOG_LEVEL: 'silent',
      ...MULTI_ACCOUNT,
      ...(options.env ?? {}),
    },
  });
  const clock = options.clock ?? new FakeClock(Date.now());
  const services = await createServices(config, {
    db: testDb.db,
    clock,
    logger: pino({ level: 'silent' }),
    ...(options.runtime ? { runtime: options.runtime } : {}),
    ...(options.hosts ? { hosts: options.hosts } : {}),
    ...(options.registryResolver ? { registryResolver: options.registryResolver } : {}),
  });
  const adminKey = (await bootstrapAdmin(services))!;
  // Every JSON answer is checked against its route's response schema (src/http/response-check.ts):
  // a mismatch answers 500 with the violations, and closing the app fails with the list.
  const mismatches: ResponseMismatch[] = [];
  const app = await buildApp(services, {
    logger: false,
    checkResponses: (m) => mismatches.push(m),
    ...(options.consoleDir !== undefined ? { consoleDir: options.consoleDir } : {}),
  });
  const request: TestApp['request'] = (key, method, url, body, headers = {}) =>
    app.inject({
      method,
      url,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body !== undefined && typeof body !== 'string' ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { payload: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
  return {
    app,
    services,
    config,
    clock,
    adminKey,
    request,
    async newAccount(name = `acct-${newId(6)}`) {
      const account = await services.accounts.createAccount(name);
      const { key } = await services.accounts.createKey(account.id, { scope: 'write' });
      const { key: readKey } = await services.accounts.createKey(account.id, { scope: 'read' });
      return { accountId: account.id, key, readKey };
    },
    async close() {
      await services.fleet.close();
      await app.close();
      await services.podController.stop();
      await services.runtime.close();
      await testDb.cleanup();
      if (mismatches.length > 0 && !options.allowResponseMismatches)
        throw new Error(
          `answers outside their route's response schema:\n${mismatches
            .map((m) => `  ${m.route} ${m.status}: ${m.violations.join('; ')}`)
            .join('\n')}`,
        );
    },
  };
}

/** Parses a JSON reply body. */
export const json = <T = any>(res: LightMyRequestResponse): T => JSON.parse(res.body) as T;

export interface ListeningServer {
  server: RunningServer;
  dataDir: string;
  /** Stops the server and removes its data folder. */
  close(): Promise<void>;
}

/**
 * A whole Gantry server listening on a loopback port (SQLite in a temp folder, logs and start-up
 * lines silenced), for tests driving it with real HTTP clients and workers. With `clock`, its time
 * is that clock's (the loops' intervals and long-polls' waits stay real).
 */
export async function startListeningServer(
  file: Record<string, unknown> = {},
  options: { clock?: Clock } = {},
): Promise<ListeningServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gantry-server-'));
  const { writeFileSync } = await import('node:fs');
  const configPath = join(dataDir, 'config.json');
  // A real port rather than 0: the public URL (which workers the autoscaler launches call) is built from it.
  const server = { port: await freePort(), ...(file.server as Record<string, unknown> | undefined) };
  // the pod HTTP proxy on a port of its own for each server (tests run side by side)
  const proxy = { port: 0, ...(file.proxy as Record<string, unknown> | undefined) };
  writeFileSync(configPath, JSON.stringify({ ...file, server, proxy }));
  const config = loadConfig({
    env: { GANTRY_DATA_DIR: dataDir, GANTRY_CONFIG: configPath, GANTRY_LOG_LEVEL: 'silent', ...MULTI_ACCOUNT },
  });
  const running = await startServer(config, {
    logger: pino({ level: 'silent' }),
    print: () => {},
    ...(options.clock ? { clock: options.clock } : {}),
  });
  return {
    server: running,
    dataDir,
    async close() {
      await running.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
