/**
 * The behaviour every Runtime adapter owes its callers, as one suite each adapter runs:
 * `describeRuntime('process', …)`, `describeRuntime('docker', …)`, and the in-memory
 * `describeRuntime('fake', …)` the service tests use, so no runtime a test relies on has rules of
 * its own. The adapter supplies images with agreed behaviour; the suite drives them over real
 * ports it picks, and talks to instances over HTTP on 127.0.0.1.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { InstanceOwner, InstanceSpec } from './runtime.js';
import {
  answers,
  ChangeRecorder,
  freePort,
  getFile,
  getJson,
  instanceSpec,
  isLive,
  putFile,
  startRunning,
  type RuntimeUnderTest,
} from './runtime-contract-support.js';
import { describeSuspend } from './runtime-suspend-contract.js';

export {
  ChangeRecorder,
  freePort,
  getJson,
  instanceSpec,
  waitFor,
  type RuntimeUnderTest,
} from './runtime-contract-support.js';

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

    test('with entrypointOverride the spec`s entrypoint replaces the image`s, and its args are the whole command after it', (t) =>
      withHttp(t, async (rt, http) => {
        if (!rt.entrypointOverride || !rt.httpEntrypoint) {
          t.skip('this runtime does not replace entrypoints');
          return;
        }
        const spec = await httpSpec(http, {
          entrypoint: [...rt.httpEntrypoint, '--from-entrypoint'],
          args: `'two words'`,
        });
        const changes = new ChangeRecorder(rt.runtime);
        await rt.runtime.start(spec);
        await changes.next(spec.id, 'running');
        // The image's entrypoint would show again in argv had the override been put after it.
        assert.deepEqual(((await getJson(portOf(spec), '/info')) as { argv: string[] }).argv, [
          '--from-entrypoint',
          'two words',
        ]);
      }));

    test('without entrypointOverride a start with an entrypoint is refused, saying so, and nothing runs', async (t) => {
      const rt = await makeRuntime();
      try {
        if (rt.entrypointOverride) {
          t.skip('this runtime replaces entrypoints');
          return;
        }
        await rt.runtime.attach();
        const spec = instanceSpec({ image: rt.images.idle, entrypoint: ['/bin/sh', '-c'], args: 'sleep 60' });
        await assert.rejects(rt.runtime.start(spec), /cannot replace the image's entrypoint/);
        assert.equal(await rt.runtime.inspect(spec.id), null);
      } finally {
        await rt.runtime.close();
        await rt.cleanup?.();
      }
    });

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

    test('a stop that discards the container forgets the instance and keeps its persistent volume for the next start', (t) =>
      withHttp(t, async ({ runtime }, http) => {
        const spec = await httpSpec(http, { volumes: [{ kind: 'persistent', path: '/workspace' }] });
        await startRunning(runtime, spec);
        await putFile(portOf(spec), '/workspace/notes/b.txt', 'kept');
        await runtime.stop(spec.id, { discard: true });
        assert.equal(await runtime.inspect(spec.id), null);
        assert.ok(!(await runtime.list()).some((s) => s.id === spec.id));
        await runtime.stop(spec.id, { discard: true });
        await startRunning(runtime, spec);
        assert.equal(await getFile(portOf(spec), '/workspace/notes/b.txt'), 'kept');
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
  describeSuspend(name, makeRuntime);
}
