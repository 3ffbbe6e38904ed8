/**
 * What the runtime contract suite (runtime-contract.ts) is made of: the adapter's side of it
 * (`RuntimeUnderTest`), and the helpers the suite and the adapters' own tests use: a free port,
 * waiting for a condition, recording changes, a spec to start, and HTTP to the http image.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import type { InstanceSpec, InstanceState, InstanceStatus, Runtime } from './runtime.js';

export interface RuntimeUnderTest {
  runtime: Runtime;
  images: {
    /** Runs until stopped and does nothing. */
    idle: string;
    /** Prints a line with "boom" on stderr and exits with code 3 straight away. */
    crashing: string;
    /**
     * Serves HTTP on private port 8000 (test/fixtures/http-server.mjs): `GET /health` → 200,
     * `GET /info` → JSON `{ env, argv, cwd, pid, bootId }` (argv: the arguments after the program;
     * bootId: new at each start of its process), `PUT /file?path=P` / `GET /file?path=P` (404 when
     * missing): a file at the instance's path P. It starts listening `LISTEN_AFTER_MS` (env,
     * default 0) after start, and the runtime health-checks it with an http probe of `/health` on
     * port 8000. Absent for a runtime that runs nothing (the in-memory fake): the rules that talk
     * to instances are skipped.
     */
    http?: string;
  };
  /**
   * Whether it runs a spec's `entrypoint` in place of the image's (its module's
   * `entrypointOverride`), or refuses such a start.
   */
  entrypointOverride: boolean;
  /** The http image's own ENTRYPOINT, which the suite runs through an override (runtimes with `entrypointOverride`). */
  httpEntrypoint?: string[];
  /**
   * Whether instances keep running across `close()` and a runtime reopened over the same state
   * adopts them (containers), or `close()` stops them (processes: see process-runtime.ts).
   */
  adoptsAfterClose: boolean;
  /** A new runtime over the same state as `runtime` (same data dir, same namespace), as a restarted server builds it. The suite closes it. */
  reopen(): Promise<Runtime>;
  /** Removes what the adapter created (temp folders, containers). */
  cleanup?(): Promise<void>;
}

/** A TCP port that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Polls `check` until it answers a truthy value, or fails after `timeoutMs` with `what`. */
export async function waitFor<T>(
  what: string,
  check: () => T | Promise<T>,
  timeoutMs = 10_000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let pause = 10;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause = Math.min(pause * 2, 100);
  }
}

/** Records every change a runtime reports, and waits for particular ones. */
export class ChangeRecorder {
  readonly changes: InstanceStatus[] = [];
  readonly #waiters = new Set<() => void>();
  readonly unsubscribe: () => void;
  constructor(runtime: Runtime) {
    this.unsubscribe = runtime.onChange((status) => {
      this.changes.push(status);
      for (const wake of this.#waiters) wake();
    });
  }
  statesOf(id: string): InstanceState[] {
    return this.changes.filter((c) => c.id === id).map((c) => c.state);
  }
  /**
   * The first change of `id` to `state`, waiting up to `timeoutMs` for it. The ceiling bounds a
   * hung test, it times nothing: a container that starts in a second on a quiet machine took over
   * 10 s through the fleet's agent with both cores loaded.
   */
  async next(id: string, state: InstanceState, timeoutMs = 30_000): Promise<InstanceStatus> {
    const find = (): InstanceStatus | undefined => this.changes.find((c) => c.id === id && c.state === state);
    const found = find();
    if (found) return found;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(
          new Error(
            `no "${state}" change of ${id} within ${timeoutMs} ms (saw: ${this.statesOf(id).join(', ') || 'nothing'})`,
          ),
        );
      }, timeoutMs);
      const check = (): void => {
        const hit = find();
        if (!hit) return;
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve(hit);
      };
      this.#waiters.add(check);
    });
  }
}

let seq = 0;
/** A spec with sensible defaults; every call gets a fresh id. */
export function instanceSpec(overrides: Partial<InstanceSpec> = {}): InstanceSpec {
  seq += 1;
  return {
    id: `ct${process.pid.toString(36)}x${seq}x${Math.random().toString(36).slice(2, 8)}`,
    owner: { kind: 'pod', accountId: 'contract' },
    image: 'unmapped/placeholder:latest',
    args: '',
    diskGb: 0,
    env: {},
    platformEnv: {},
    hostId: 'local',
    gpuIndices: [],
    vcpus: 2,
    memoryGb: 4,
    ports: [],
    volumes: [],
    ...overrides,
  };
}

/**
 * One HTTP request to 127.0.0.1:`port` on a connection of its own: an instance stopped and started
 * again on the same port must not be reached through a pooled connection to its previous run.
 */
function request(
  port: number,
  method: string,
  path: string,
  body?: string,
  timeoutMs = 5_000,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, agent: false, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.once('timeout', () =>
      req.destroy(new Error(`${method} ${path} on port ${port}: no answer within ${timeoutMs} ms`)),
    );
    req.once('error', reject);
    req.end(body);
  });
}

export async function getJson(port: number, path: string): Promise<unknown> {
  const res = await request(port, 'GET', path);
  assert.equal(res.status, 200, `GET ${path} answered ${res.status}`);
  return JSON.parse(res.body);
}

const fileUrl = (path: string): string => `/file?path=${encodeURIComponent(path)}`;

/** Writes `content` to the instance's file `path` (the http image's `PUT /file`). */
export async function putFile(port: number, path: string, content: string): Promise<void> {
  const res = await request(port, 'PUT', fileUrl(path), content);
  assert.equal(res.status, 204, `PUT /file?path=${path} answered ${res.status}: ${res.body}`);
}

/** The instance's file `path`, or null when it has none. */
export async function getFile(port: number, path: string): Promise<string | null> {
  const res = await request(port, 'GET', fileUrl(path));
  if (res.status === 404) return null;
  assert.equal(res.status, 200, `GET /file?path=${path} answered ${res.status}`);
  return res.body;
}

/** Whether anything answers HTTP on the port. */
export async function answers(port: number): Promise<boolean> {
  try {
    await request(port, 'GET', '/health', undefined, 2_000);
    return true;
  } catch {
    return false;
  }
}

/** Starts `spec` and waits until it is running; fails with the states seen when it is not. */
export async function startRunning(runtime: Runtime, spec: InstanceSpec, timeoutMs = 30_000): Promise<InstanceStatus> {
  const changes = new ChangeRecorder(runtime);
  try {
    const started = await runtime.start(spec);
    if (started.state === 'running') return started;
    return await changes.next(spec.id, 'running', timeoutMs);
  } finally {
    changes.unsubscribe();
  }
}

export const isLive = (state: InstanceState | undefined): boolean => state === 'starting' || state === 'running';
