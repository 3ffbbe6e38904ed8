/**
 * The behaviour every Runtime adapter owes its callers, as one suite each adapter runs:
 * `describeRuntime('process', makeProcessRuntime)`, later `describeRuntime('docker', …)`.
 * The adapter supplies three images with agreed behaviour; the suite drives them over real
 * ports it picks, and talks to instances over HTTP on 127.0.0.1.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
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
     * Serves HTTP on private port 8000: `GET /health` → 200, `GET /info` → JSON `{ env, argv, cwd }`
     * (argv: the arguments after the program). It starts listening `LISTEN_AFTER_MS` (env, default 0)
     * after start, and the runtime health-checks it with an http probe of `/health` on port 8000.
     */
    http: string;
  };
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
export async function waitFor<T>(what: string, check: () => T | Promise<T>, timeoutMs = 10_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let pause = 10;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
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
  /** The first change of `id` to `state`, waiting up to `timeoutMs` for it. */
  async next(id: string, state: InstanceState, timeoutMs = 10_000): Promise<InstanceStatus> {
    const find = (): InstanceStatus | undefined => this.changes.find((c) => c.id === id && c.state === state);
    const found = find();
    if (found) return found;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Error(`no "${state}" change of ${id} within ${timeoutMs} ms (saw: ${this.statesOf(id).join(', ') || 'nothing'})`));
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

export async function getJson(port: number, path: string): Promise<unknown> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  assert.equal(res.status, 200, `GET ${path} answered ${res.status}`);
  return res.json();
}

export function describeRuntime(name: string, makeRuntime: () => Promise<RuntimeUnderTest>): void {
  /** Runs `body` against a fresh runtime that is closed (and cleaned up) afterwards, whatever happens. */
  const withRuntime = async (body: (rt: RuntimeUnderTest) => Promise<void>): Promise<void> => {
    const rt = await makeRuntime();
    try {
      await body(rt);
    } finally {
      await rt.runtime.close();
      await rt.cleanup?.();
    }
  };

  const httpSpec = async (images: RuntimeUnderTest['images'], overrides: Partial<InstanceSpec> = {}): Promise<InstanceSpec> =>
    instanceSpec({ image: images.http, ports: [{ private: 8000, public: await freePort(), protocol: 'http' }], ...overrides });

  describe(`Runtime contract: ${name}`, () => {
    test('a started instance is inspected and listed until it is stopped, then forgotten', () =>
      withRuntime(async ({ runtime, images }) => {
        const spec = instanceSpec({ image: images.idle });
        const started = await runtime.start(spec);
        assert.equal(started.id, spec.id);
        assert.ok(started.state === 'starting' || started.state === 'running', `state ${started.state}`);
        assert.equal(typeof started.startedAt, 'number');
        assert.equal((await runtime.inspect(spec.id))?.id, spec.id);
        assert.ok((await runtime.list()).some((s) => s.id === spec.id));
        await runtime.stop(spec.id);
        assert.equal(await runtime.inspect(spec.id), null);
        assert.ok(!(await runtime.list()).some((s) => s.id === spec.id));
      }));

    test('stopping an instance twice, or stopping an unknown id, is a no-op', () =>
      withRuntime(async ({ runtime, images }) => {
        const spec = instanceSpec({ image: images.idle });
        await runtime.start(spec);
        await Promise.all([runtime.stop(spec.id), runtime.stop(spec.id)]);
        await runtime.stop(spec.id);
        await runtime.stop('no-such-instance');
        assert.equal(await runtime.inspect(spec.id), null);
      }));

    test('starting an id that is already running is refused and leaves the first instance alone', () =>
      withRuntime(async ({ runtime, images }) => {
        const spec = instanceSpec({ image: images.idle });
        await runtime.start(spec);
        await assert.rejects(runtime.start(spec), /already/);
        const status = await runtime.inspect(spec.id);
        assert.ok(status?.state === 'starting' || status?.state === 'running');
      }));

    test('an instance sees its id, its port bindings, its env and its args', () =>
      withRuntime(async ({ runtime, images }) => {
        const spec = await httpSpec(images, {
          env: { GREETING: 'hello world' },
          args: `--name "two words" --flag`,
        });
        const changes = new ChangeRecorder(runtime);
        await runtime.start(spec);
        await changes.next(spec.id, 'running');
        const publicPort = spec.ports[0]!.public;
        const info = (await getJson(publicPort, '/info')) as { env: Record<string, string>; argv: string[] };
        assert.equal(info.env.GANTRY_INSTANCE_ID, spec.id);
        assert.equal(info.env.RUNPOD_POD_ID, spec.id);
        assert.equal(info.env.GREETING, 'hello world');
        assert.equal(info.env.GANTRY_PORT_8000, String(publicPort));
        assert.equal(info.env.RUNPOD_CPU_COUNT, String(spec.vcpus));
        assert.deepEqual(info.argv.slice(-3), ['--name', 'two words', '--flag']);
      }));

    test('a health-checked instance is starting until it answers, then running, and listeners hear both', () =>
      withRuntime(async ({ runtime, images }) => {
        const spec = await httpSpec(images, { env: { LISTEN_AFTER_MS: '400' } });
        const changes = new ChangeRecorder(runtime);
        const started = await runtime.start(spec);
        assert.equal(started.state, 'starting');
        assert.equal((await runtime.inspect(spec.id))?.state, 'starting');
        const running = await changes.next(spec.id, 'running');
        assert.equal(running.id, spec.id);
        assert.deepEqual(changes.statesOf(spec.id), ['starting', 'running']);
        assert.equal((await runtime.inspect(spec.id))?.state, 'running');
        // Running means it answers.
        await getJson(spec.ports[0]!.public, '/info');
      }));

    test('an instance that exits with code 3 becomes exited with its code and its output, and listeners are told', () =>
      withRuntime(async ({ runtime, images }) => {
        const spec = instanceSpec({ image: images.crashing });
        const changes = new ChangeRecorder(runtime);
        await runtime.start(spec);
        const exited = await changes.next(spec.id, 'exited');
        assert.equal(exited.exitCode, 3);
        assert.match(exited.reason ?? '', /code 3/);
        assert.match(exited.reason ?? '', /boom/);
        const inspected = await runtime.inspect(spec.id);
        assert.equal(inspected?.state, 'exited');
        assert.equal(inspected?.exitCode, 3);
        await runtime.stop(spec.id);
        assert.equal(await runtime.inspect(spec.id), null);
      }));

    test('close stops every instance', () =>
      withRuntime(async ({ runtime, images }) => {
        const specs = [instanceSpec({ image: images.idle }), instanceSpec({ image: images.idle }), instanceSpec()];
        for (const spec of specs) await runtime.start(spec);
        await runtime.close();
        assert.deepEqual(await runtime.list(), []);
        for (const spec of specs) assert.equal(await runtime.inspect(spec.id), null);
      }));

    test('a listener that throws neither breaks the runtime nor keeps others from hearing', () =>
      withRuntime(async ({ runtime, images }) => {
        runtime.onChange(() => {
          throw new Error('listener bug');
        });
        runtime.onChange(async () => {
          throw new Error('async listener bug');
        });
        const changes = new ChangeRecorder(runtime);
        const spec = instanceSpec({ image: images.crashing });
        await runtime.start(spec);
        await changes.next(spec.id, 'exited');
        const next = instanceSpec({ image: images.idle });
        await runtime.start(next);
        assert.ok(await runtime.inspect(next.id));
      }));

    test('an unsubscribed listener hears nothing more', () =>
      withRuntime(async ({ runtime, images }) => {
        const heard: string[] = [];
        const unsubscribe = runtime.onChange((s) => heard.push(s.id));
        const first = instanceSpec({ image: images.idle });
        await runtime.start(first);
        assert.ok(heard.includes(first.id), 'a start is a change listeners hear');
        unsubscribe();
        const changes = new ChangeRecorder(runtime);
        const second = instanceSpec({ image: images.crashing });
        await runtime.start(second);
        await changes.next(second.id, 'exited');
        assert.ok(!heard.includes(second.id));
      }));
  });
}
