// A `gantry serve` child process for the job benchmarks: its own data dir (or PostgreSQL schema),
// a rate-limit-exempt write key, and helpers to create queue endpoints over the REST API.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import pg from 'pg';
import { startChild, type Child } from './processes.js';

const root = join(import.meta.dirname, '..', '..');
export const gantryBin = join(root, 'bin', 'gantry.js');

export interface GantryOptions {
  /** The config file's contents. */
  config?: Record<string, unknown>;
  /** Reuse this data dir (left in place on stop); default a fresh temp dir, removed on stop. */
  dataDir?: string;
  /** PostgreSQL URL; the server then uses a private schema, dropped on stop (unless `schema` is given). */
  databaseUrl?: string;
  schema?: string;
  env?: Record<string, string>;
  /** Listen port; give a real one when workers must call back (the public URL is built from it). @default 0 */
  port?: number;
  /** Extra node flags for the server (e.g. `--cpu-prof`). */
  nodeArgs?: string[];
}

export interface Gantry extends Child {
  dataDir: string;
  /** A write key, exempt from the rate limits. */
  key: string;
  headers: Record<string, string>;
  /** JSON over HTTP with the key; throws on a non-2xx answer. */
  api<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  /** A queue endpoint on a new serverless template; workersMax 0 unless given (no autoscaled workers). */
  createEndpoint(options?: {
    imageName?: string;
    workersMax?: number;
    idleTimeout?: number;
    [k: string]: unknown;
  }): Promise<string>;
  /** SIGKILL: no graceful flush (to check that every acknowledged write is already durable). */
  kill(): Promise<void>;
  /** Stops the server and removes what it created (temp dir, private schema). */
  stop(): Promise<void>;
}

let seq = 0;

export async function startGantry(options: GantryOptions = {}): Promise<Gantry> {
  const ownDir = !options.dataDir;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'gantry-bench-'));
  const configPath = join(dataDir, 'bench-config.json');
  writeFileSync(configPath, JSON.stringify(options.config ?? {}));
  const schema = options.databaseUrl
    ? (options.schema ?? `bench_${process.pid}_${Date.now().toString(36)}_${seq++}`)
    : undefined;
  const env: Record<string, string> = {
    GANTRY_LOG_LEVEL: 'warn',
    ...(options.databaseUrl ? { GANTRY_DATABASE_URL: options.databaseUrl, GANTRY_DATABASE_SCHEMA: schema! } : {}),
    ...options.env,
  };
  const cleanup = async () => {
    if (schema && !options.schema) {
      const c = new pg.Client({ connectionString: options.databaseUrl });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await c.end();
    }
    if (ownDir) rmSync(dataDir, { recursive: true, force: true });
  };
  let child: Child;
  try {
    child = await startChild(
      [
        ...(options.nodeArgs ?? []),
        gantryBin,
        'serve',
        '--port',
        String(options.port ?? 0),
        '--host',
        '127.0.0.1',
        '--data-dir',
        dataDir,
        '--config',
        configPath,
      ],
      env,
      /gantry listening on (\S+)/,
    );
  } catch (err) {
    await cleanup();
    throw err;
  }
  const made = spawnSync(
    process.execPath,
    [gantryBin, 'keys', 'create', '--account', 'admin', '--scope', 'write', '--exempt', '--data-dir', dataDir],
    {
      encoding: 'utf8',
      env: { ...process.env, ...env },
    },
  );
  const key = made.stdout.trim().split('\n').pop() ?? '';
  if (!key) {
    await child.stop();
    await cleanup();
    throw new Error(`could not create a key: ${made.stderr}`);
  }
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${child.url}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return (text ? JSON.parse(text) : undefined) as T;
  };
  let endpoints = 0;
  return {
    ...child,
    dataDir,
    key,
    headers,
    api,
    async createEndpoint({ imageName = 'bench-worker:dev', workersMax = 0, idleTimeout = 5, ...rest } = {}) {
      const n = endpoints++;
      const template = await api<{ id: string }>('POST', '/v2/templates', {
        name: `bench-${n}-${Date.now()}`,
        image: imageName,
        serverless: true,
        disk: 5,
      });
      // REST v2's endpoint shape (docs/serverless.md)
      const endpoint = await api<{ id: string }>('POST', '/v2/serverless', {
        name: `bench-${n}`,
        templateId: template.id,
        type: 'QUEUE',
        gpu: { pools: ['ADA_24'] },
        scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
        workers: { min: 0, max: workersMax, idleTimeout },
        ...rest,
      });
      return endpoint.id;
    },
    kill: () =>
      new Promise((resolve) => {
        if (child.child.exitCode !== null || child.child.signalCode !== null) return resolve();
        child.child.once('exit', () => resolve());
        child.child.kill('SIGKILL');
      }),
    async stop() {
      await child.stop();
      await cleanup();
    },
  };
}

/** Percentile (0-100) of already sorted numbers. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Runs `count` tasks on `concurrency` loops; answers elapsed seconds. */
export async function loops(count: number, concurrency: number, task: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await task(next++);
    }),
  );
  return (performance.now() - started) / 1000;
}

export const verdict = (ok: boolean): string => (ok ? 'PASS' : 'FAIL');

/** A TCP port free on 127.0.0.1 right now. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
