/**
 * The rules of the runtime port's optional `suspend`/`resume` (FlashBoot), run by
 * runtime-contract.ts for every adapter; skipped for a runtime without the capability. A frozen
 * instance is told apart from a running one by what it does, not by time: a request sent to it
 * while it is suspended is accepted by the kernel and answered only once it is resumed, by the
 * same process (its boot id unchanged).
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { InstanceSpec, Runtime } from './runtime.js';
import {
  ChangeRecorder,
  freePort,
  getJson,
  instanceSpec,
  startRunning,
  type RuntimeUnderTest,
} from './runtime-contract-support.js';

type Capable = Runtime & Required<Pick<Runtime, 'suspend' | 'resume'>>;

/** A raw `GET path` on the port, sent once connected: `sent` resolves then; `answer` with what came back. */
function rawGet(port: number, path: string): { sent: Promise<void>; answer: Promise<string>; heard: () => boolean } {
  const socket = connect(port, '127.0.0.1');
  let received = '';
  const sent = new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.once('connect', () => socket.write(`GET ${path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n`, () => resolve()));
  });
  const answer = new Promise<string>((resolve, reject) => {
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    socket.once('end', () => resolve(received));
    socket.once('error', reject);
  });
  return { sent, answer, heard: () => received.length > 0 };
}

export function describeSuspend(name: string, makeRuntime: () => Promise<RuntimeUnderTest>): void {
  /** Runs `body` on a fresh, attached runtime that has the capability (else skips), closed after. */
  const withCapable = async (
    t: TestContext,
    body: (runtime: Capable, rt: RuntimeUnderTest) => Promise<void>,
  ): Promise<void> => {
    const rt = await makeRuntime();
    try {
      if (!rt.runtime.suspend || !rt.runtime.resume) {
        t.skip('this runtime cannot suspend instances');
        return;
      }
      await rt.runtime.attach();
      await body(rt.runtime as Capable, rt);
    } finally {
      await rt.runtime.close();
      await rt.cleanup?.();
    }
  };
  const httpSpec = async (image: string): Promise<InstanceSpec> =>
    instanceSpec({ image, ports: [{ private: 8000, public: await freePort(), protocol: 'http' }] });

  describe(`Runtime contract: ${name}: suspend and resume`, () => {
    test('a suspended instance answers nothing until it is resumed, then the same process answers', (t) =>
      withCapable(t, async (runtime, { images }) => {
        if (images.http === undefined) return t.skip('this runtime runs no http image');
        const spec = await httpSpec(images.http);
        await startRunning(runtime, spec);
        const port = spec.ports[0]!.public;
        const { bootId } = (await getJson(port, '/info')) as { bootId: string };
        const changes = new ChangeRecorder(runtime);
        try {
          await runtime.suspend(spec.id);
          assert.equal((await runtime.inspect(spec.id))?.state, 'suspended');
          assert.equal((await runtime.list()).find((s) => s.id === spec.id)?.state, 'suspended');
          await changes.next(spec.id, 'suspended');

          const request = rawGet(port, '/info');
          await request.sent;
          // The round trips of a second suspend and an inspect give a running process ample time to answer.
          await runtime.suspend(spec.id);
          assert.equal((await runtime.inspect(spec.id))?.state, 'suspended');
          assert.equal(request.heard(), false, 'a suspended instance answers nothing');

          await runtime.resume(spec.id);
          assert.equal((await runtime.inspect(spec.id))?.state, 'running');
          await changes.next(spec.id, 'running');
          const answer = await request.answer;
          assert.match(answer, /^HTTP\/1\.[01] 200/);
          assert.equal((JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { bootId: string }).bootId, bootId);
          assert.deepEqual(changes.statesOf(spec.id), ['suspended', 'running'], 'one change each way');
        } finally {
          changes.unsubscribe();
        }
      }));

    test('suspend and resume are idempotent', (t) =>
      withCapable(t, async (runtime, { images }) => {
        const spec = instanceSpec({ image: images.idle });
        await startRunning(runtime, spec);
        await runtime.resume(spec.id);
        assert.equal((await runtime.inspect(spec.id))?.state, 'running', 'resuming a running instance changes nothing');
        await Promise.all([runtime.suspend(spec.id), runtime.suspend(spec.id)]);
        await runtime.suspend(spec.id);
        assert.equal((await runtime.inspect(spec.id))?.state, 'suspended');
        await Promise.all([runtime.resume(spec.id), runtime.resume(spec.id)]);
        await runtime.resume(spec.id);
        assert.equal((await runtime.inspect(spec.id))?.state, 'running');
      }));

    test('suspending or resuming an unknown id, or an instance that does not run, is refused saying why', (t) =>
      withCapable(t, async (runtime, { images }) => {
        await assert.rejects(runtime.suspend('no-such-instance'), /no-such-instance/);
        await assert.rejects(runtime.resume('no-such-instance'), /no-such-instance/);
        const crashing = instanceSpec({ image: images.crashing });
        const changes = new ChangeRecorder(runtime);
        try {
          await runtime.start(crashing);
          await changes.next(crashing.id, 'exited');
        } finally {
          changes.unsubscribe();
        }
        await assert.rejects(runtime.suspend(crashing.id), /exited/);
        await assert.rejects(runtime.resume(crashing.id), /exited/);
        const stopped = instanceSpec({ image: images.idle });
        await startRunning(runtime, stopped);
        await runtime.stop(stopped.id);
        await assert.rejects(runtime.suspend(stopped.id), new RegExp(stopped.id));
      }));

    test('a suspended instance is stopped like a running one, and is gone after', (t) =>
      withCapable(t, async (runtime, { images }) => {
        const spec = images.http === undefined ? instanceSpec({ image: images.idle }) : await httpSpec(images.http);
        await startRunning(runtime, spec);
        await runtime.suspend(spec.id);
        await runtime.stop(spec.id);
        assert.equal(await runtime.inspect(spec.id), null);
        assert.ok(!(await runtime.list()).some((s) => s.id === spec.id));
      }));

    test('a runtime that hands its instances over adopts a suspended instance as suspended, and resumes it', (t) =>
      withCapable(t, async (runtime, rt) => {
        if (!rt.adoptsAfterClose) return t.skip('this runtime stops its instances on close');
        const spec = instanceSpec({ image: rt.images.idle });
        await startRunning(runtime, spec);
        await runtime.suspend(spec.id);
        await runtime.close();
        const reopened = await rt.reopen();
        try {
          const found = (await reopened.attach()).find((a) => a.id === spec.id);
          assert.equal(found?.status?.state, 'suspended', 'adopted as suspended');
          assert.equal((await reopened.inspect(spec.id))?.state, 'suspended');
          await reopened.resume!(spec.id);
          assert.equal((await reopened.inspect(spec.id))?.state, 'running');
          await reopened.remove(spec.id);
        } finally {
          await reopened.close();
        }
      }));
  });
}
