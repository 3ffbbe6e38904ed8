/**
 * The behaviour every Runtime adapter owes its callers, as one suite each adapter runs:
 * `describeRuntime('process', …)`, `describeRuntime('docker', …)`, and the in-memory
 * `describeRuntime('fake', …)` the service tests use, so no runtime a test relies on has rules of
 * its own. The adapter supplies images with agreed behaviour; the suite drives them over real
 * ports it picks, and talks to instances over HTTP on 127.0.0.1.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import type { InstanceOwner, InstanceSpec, InstanceState, InstanceStatus, Runtime } from './runtime.js';

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
async function putFile(port: number, path: string, content: string): Promise<void> {
  const res = await request(port, 'PUT', fileUrl(path), content);
  assert.equal(res.status, 204, `PUT /file?path=${path} answered ${res.status}: ${res.body}`);
}

/** The instance's file `path`, or null when it has none. */
async function getFile(port: number, path: string): Promise<string | null> {
  const res = await request(port, 'GET', fileUrl(path));
  if (res.status === 404) return null;
  assert.equal(res.status, 200, `GET /file?path=${path} answered ${res.status}`);
  return res.body;
}

/** Whether anything answers HTTP on the port. */
async function answers(port: number): Promise<boolean> {
  try {
    await request(port, 'GET', '/health', undefined, 2_000);
    return true;
  } catch {
    return false;
  }
}

/** Starts `spec` and waits until it is running; fails with the states seen when it is not. */
async function startRunning(runtime: Runtime, spec: InstanceSpec, timeoutMs = 30_000): Promise<InstanceStatus> {
  const changes = new ChangeRecorder(runtime);
  try {
    const started = await runtime.start(spec);
    if (started.state === 'running') return started;
    return await changes.next(spec.id, 'running', timeoutMs);
  } finally {
    changes.unsubscribe();
  }
}

const isLive = (state: InstanceState | undefined): boolean => state === 'starting' || state === 'running';

export function describeRuntime(name: string, makeRuntime: () => Promise<RuntimeUnderTest>): void {
  /**
   * Runs `body` against a fresh runtime, attached first as the port asks, that is closed (and
   * cleaned up) afterwards, whatever happens.
   */
  const withRuntime = async (body: (rt: RuntimeUnderTest) => Promise<void>): Promise<void> => {
    const rt = await makeRuntime();
    try {
      await rt.runtime.attach();
      await body(rt);
    } finally {
      await rt.runtime.close();
      await rt.cleanup?.();
    }
  };

  /** Runs `body` with the http image, or skips the test for a runtime without one. */
  const withHttp = (t: TestContext, body: (rt: RuntimeUnderTest, http: string) => Promise<void>): Promise<void> =>
    withRuntime(async (rt) => {
      if (rt.images.http === undefined) {
        t.skip('this runtime runs no http image');
        return;
      }
      await body(rt, rt.images.http);
    });

  const httpSpec = async (image: string, overrides: Partial<InstanceSpec> = {}): Promise<InstanceSpec> =>
    instanceSpec({ image, ports: [{ private: 8000, public: await freePort(), protocol: 'http' }], ...overrides });
  const portOf = (spec: InstanceSpec): number => spec.ports[0]!.public;
  const bootIdOf = async (spec: InstanceSpec): Promise<string> =>
    ((await getJson(portOf(spec), '/info')) as { bootId: string }).bootId;

  describe(`Runtime contract: ${name}`, () => {
    test('a runtime over fresh state attaches to no instance', async () => {
      const rt = await makeRuntime();
      try {
        assert.deepEqual(await rt.runtime.attach(), []);
        assert.deepEqual(await rt.runtime.list(), []);
      } finally {
        await rt.runtime.close();
        await rt.cleanup?.();
      }
    });

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

    test('an instance sees its id, its port bindings, its env and its args', (t) =>
      withHttp(t, async ({ runtime }, http) => {
        const spec = await httpSpec(http, {
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

    test('a health-checked instance is starting until it answers, then running, and listeners hear both', (t) =>
      withHttp(t, async ({ runtime }, http) => {
        const spec = await httpSpec(http, { env: { LISTEN_AFTER_MS: '400' } });
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

    test('a runtime that cannot hand its instances over stops every one on close, and a reopened runtime attaches to none', (t) =>
      withRuntime(async (rt) => {
        if (rt.adoptsAfterClose) {
          t.skip('this runtime hands its instances over (adoptsAfterClose)');
          return;
        }
        const { runtime, images } = rt;
        const specs = [
          instanceSpec({ image: images.idle }),
          instanceSpec({ image: images.idle, owner: { kind: 'worker', accountId: 'contract', endpointId: 'ep1' } }),
        ];
        for (const spec of specs) await runtime.start(spec);
        const served = images.http === undefined ? null : await httpSpec(images.http);
        if (served) await startRunning(runtime, served);
        await runtime.close();
        assert.deepEqual(await runtime.list(), []);
        for (const spec of specs) assert.equal(await runtime.inspect(spec.id), null);
        if (served) assert.equal(await answers(portOf(served)), false, 'a stopped instance answers no more');
        const reopened = await rt.reopen();
        try {
          assert.deepEqual(await reopened.attach(), []);
          assert.deepEqual(await reopened.list(), []);
        } finally {
          await reopened.close();
        }
      }));

    test('a runtime that hands its instances over leaves them running on close, and a reopened runtime adopts them as they are', (t) =>
      withRuntime(async (rt) => {
        if (!rt.adoptsAfterClose) {
          t.skip('this runtime stops its instances on close (adoptsAfterClose: false)');
          return;
        }
        const { runtime, images } = rt;
        const worker: InstanceOwner = { kind: 'worker', accountId: 'contract', endpointId: 'ep1' };
        const live = [instanceSpec({ image: images.idle }), instanceSpec({ image: images.idle, owner: worker })];
        for (const spec of live) await runtime.start(spec);
        const served = images.http === undefined ? null : await httpSpec(images.http);
        if (served) {
          await startRunning(runtime, served);
          live.push(served);
        }
        const bootId = served && (await bootIdOf(served));
        const kept = instanceSpec({ image: images.idle });
        await runtime.start(kept);
        await runtime.stop(kept.id);
        const removed = instanceSpec({ image: images.idle });
        await runtime.start(removed);
        await runtime.remove(removed.id);
        await runtime.close();

        const reopened = await rt.reopen();
        try {
          const attached = await reopened.attach();
          for (const spec of live) {
            const found = attached.find((a) => a.id === spec.id);
            assert.ok(found, `instance ${spec.id} is adopted`);
            assert.deepEqual(found.owner, spec.owner);
            assert.ok(isLive(found.status?.state), `adopted live (${found.status?.state})`);
            assert.ok(isLive((await reopened.inspect(spec.id))?.state));
          }
          const stopped = attached.find((a) => a.id === kept.id);
          assert.ok(stopped, 'a stopped instance is kept, and found');
          assert.equal(stopped.status, null, 'as stopped');
          assert.deepEqual(stopped.owner, kept.owner);
          assert.ok(!attached.some((a) => a.id === removed.id), 'a removed instance is gone');
          const listed = (await reopened.list()).map((s) => s.id);
          for (const spec of live) assert.ok(listed.includes(spec.id), `${spec.id} is listed`);
          if (served) assert.equal(await bootIdOf(served), bootId, 'the adopted instance was not restarted');
        } finally {
          for (const spec of [...live, kept]) await reopened.remove(spec.id);
          await reopened.close();
        }
      }));

    test('a file written under a persistent volume survives stop and start of the same id, and is gone after remove and start', (t) =>
      withHttp(t, async ({ runtime }, http) => {
        const spec = await httpSpec(http, { volumes: [{ kind: 'persistent', path: '/workspace' }] });
        await startRunning(runtime, spec);
        await putFile(portOf(spec), '/workspace/notes/a.txt', 'kept');
        await runtime.stop(spec.id);
        await startRunning(runtime, spec);
        assert.equal(await getFile(portOf(spec), '/workspace/notes/a.txt'), 'kept');
        await runtime.remove(spec.id);
        assert.equal(await runtime.inspect(spec.id), null);
        await startRunning(runtime, spec);
        assert.equal(await getFile(portOf(spec), '/workspace/notes/a.txt'), null);
        await runtime.remove(spec.id);
      }));

    test('instances mounting the same network volume, at any path, see each other’s files', (t) =>
      withHttp(t, async ({ runtime }, http) => {
        const volumeId = `ctvol${Math.random().toString(36).slice(2, 10)}`;
        const a = await httpSpec(http, { volumes: [{ kind: 'network', volumeId, path: '/runpod-volume' }] });
        const b = await httpSpec(http, { volumes: [{ kind: 'network', volumeId, path: '/shared' }] });
        try {
          await Promise.all([startRunning(runtime, a), startRunning(runtime, b)]);
          await putFile(portOf(a), '/runpod-volume/from-a.txt', 'A');
          assert.equal(await getFile(portOf(b), '/shared/from-a.txt'), 'A');
          await putFile(portOf(b), '/shared/deeper/from-b.txt', 'B');
          assert.equal(await getFile(portOf(a), '/runpod-volume/deeper/from-b.txt'), 'B');
        } finally {
          await Promise.all([runtime.remove(a.id), runtime.remove(b.id)]);
          await runtime.removeVolume({ kind: 'network', volumeId });
        }
      }));

    test('removing an instance leaves its network volume’s data, and removeVolume deletes it', (t) =>
      withHttp(t, async ({ runtime }, http) => {
        const volumeId = `ctvol${Math.random().toString(36).slice(2, 10)}`;
        const volumes = [{ kind: 'network' as const, volumeId, path: '/data' }];
        const writer = await httpSpec(http, { volumes });
        await startRunning(runtime, writer);
        await putFile(portOf(writer), '/data/model.bin', 'weights');
        await runtime.remove(writer.id);
        const reader = await httpSpec(http, { volumes });
        await startRunning(runtime, reader);
        assert.equal(
          await getFile(portOf(reader), '/data/model.bin'),
          'weights',
          'removing an instance leaves the network volume',
        );
        await runtime.remove(reader.id);
        await runtime.removeVolume({ kind: 'network', volumeId });
        const after = await httpSpec(http, { volumes });
        try {
          await startRunning(runtime, after);
          assert.equal(await getFile(portOf(after), '/data/model.bin'), null);
        } finally {
          await runtime.remove(after.id);
          await runtime.removeVolume({ kind: 'network', volumeId });
        }
      }));

    test('remove stops a running instance and forgets it; removing an unknown id or an unknown volume is a no-op', () =>
      withRuntime(async ({ runtime, images }) => {
        const spec = instanceSpec({ image: images.idle });
        await runtime.start(spec);
        await runtime.remove(spec.id);
        assert.equal(await runtime.inspect(spec.id), null);
        assert.ok(!(await runtime.list()).some((s) => s.id === spec.id));
        await runtime.remove(spec.id);
        await runtime.remove('no-such-instance');
        await runtime.removeVolume({ kind: 'network', volumeId: 'no-such-volume' });
        const again = await runtime.start(spec);
        assert.ok(isLive(again.state), 'a removed id can be started afresh');
      }));

    test('a listener that throws neither breaks the runtime nor keeps others from hearing', () =>
      withRuntime(async ({ runtime, images }) => {
        runtime.onChange(() => {
          throw new Error('listener bug');
        });
        // A listener returning a rejected promise is the case under test.
        // eslint-disable-next-line @typescript-eslint/no-misused-promises
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
