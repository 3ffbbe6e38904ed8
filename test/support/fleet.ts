/**
 * Helpers for the agent protocol's tests: a whole listening server on SQLite or on a given
 * PostgreSQL schema (several may share one), and what a stand-in agent sends.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import type { Clock } from '../../src/domain/clock.js';
import { startServer, type RunningServer } from '../../src/main.js';
import { freePort } from '../../src/runtime/runtime-contract.js';
import { openDatabase } from '../../src/store/database.js';
import type { HostCapacity } from '../../src/fleet/protocol.js';
import { postgresUrl, type DialectName } from './harness.js';
export { until } from './eventually.js';

/** The secret key every test server shares (replicas of one database must). */
const TEST_SECRET_KEY = 'cd'.repeat(32);

export interface FleetServer {
  server: RunningServer;
  url: string;
  close(): Promise<void>;
}

/**
 * A listening server on a private SQLite data dir, or on `schema` of the test PostgreSQL database
 * (created and migrated by whoever opened it first; not dropped here).
 */
export async function startFleetServer(
  options: {
    dialect?: DialectName;
    schema?: string;
    clock?: Clock;
    file?: Record<string, unknown>;
    env?: Record<string, string>;
  } = {},
): Promise<FleetServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gantry-fleet-'));
  const configPath = join(dataDir, 'config.json');
  const file = options.file ?? {};
  writeFileSync(
    configPath,
    JSON.stringify({
      ...file,
      server: { port: await freePort(), ...(file.server as Record<string, unknown> | undefined) },
    }),
  );
  const config = loadConfig({
    env: {
      GANTRY_DATA_DIR: dataDir,
      GANTRY_CONFIG: configPath,
      GANTRY_LOG_LEVEL: 'silent',
      GANTRY_SECRET_KEY: TEST_SECRET_KEY,
      GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT: 'true',
      ...options.env,
    },
  });
  const postgres = options.dialect === 'postgres';
  if (postgres && !options.schema) throw new Error('startFleetServer on postgres needs the schema');
  const db = postgres ? await openDatabase({ url: postgresUrl(), dataDir, schema: options.schema! }) : undefined;
  const server = await startServer(config, {
    logger: pino({ level: 'silent' }),
    print: () => {},
    ...(db ? { db } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  return {
    server,
    url: server.url,
    async close() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

let uuidCounter = 0;
/** A GPU UUID no other test host has. */
export const gpuUuid = (): string =>
  `GPU-${(++uuidCounter).toString(16).padStart(8, '0')}-${Math.random().toString(16).slice(2, 10)}-aaaa-bbbb-cccc`;

/** A believable host: two RTX 4090s unless told otherwise. */
export function capacity(over: Partial<HostCapacity> = {}): HostCapacity {
  return {
    vcpus: 32,
    memoryGb: 128,
    diskGb: 1000,
    gpus: [
      { uuid: gpuUuid(), name: 'NVIDIA GeForce RTX 4090', memoryMb: 24564 },
      { uuid: gpuUuid(), name: 'NVIDIA GeForce RTX 4090', memoryMb: 24564 },
    ],
    cudaVersion: '12.4',
    gpuMode: 'nvidia',
    cpuFlavors: [],
    notes: [],
    ...over,
  };
}

export const joinBody = (token: string, over: Record<string, unknown> = {}) => ({
  token,
  name: 'gpu-07',
  publicIp: '127.0.0.1',
  portRange: [40000, 40999],
  agentVersion: '0.1.0',
  capacity: capacity(),
  ...over,
});

/** A JSON call with a bearer credential (or none); answers status and parsed body. */
export async function call(
  base: string,
  credential: string | null,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  signal?: AbortSignal,
): Promise<{ status: number; body: any; contentType: string }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(credential ? { authorization: `Bearer ${credential}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    ...(signal ? { signal } : {}),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text ? JSON.parse(text) : null,
    contentType: res.headers.get('content-type') ?? '',
  };
}
