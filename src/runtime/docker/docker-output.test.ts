import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DOCKER_HOST, dockerEngine, makeDockerRuntime, noEngine } from '../../../test/support/docker.js';
import { UnixSocketProxy } from '../../../test/support/socket-proxy.js';
import { instanceSpec, waitFor } from '../runtime-contract.js';
import type { OutputLine, OutputQuery, Runtime } from '../runtime.js';
import { parseLine } from './docker-output.js';

const engine = await dockerEngine();
after(() => engine?.client.close());

const collect = async (runtime: Runtime, id: string, q: Partial<OutputQuery> = {}): Promise<OutputLine[]> => {
  const out: OutputLine[] = [];
  for await (const l of runtime.output!(id, { follow: false, signal: new AbortController().signal, ...q })) out.push(l);
  return out;
};

test("the engine's RFC3339Nano times are read to the millisecond", () => {
  assert.deepEqual(parseLine('2026-06-01T12:02:03.123456789Z Model loaded.\r'), {
    ts: Date.UTC(2026, 5, 1, 12, 2, 3, 123),
    line: 'Model loaded.',
  });
  assert.deepEqual(parseLine('2026-06-01T12:02:03Z '), { ts: Date.UTC(2026, 5, 1, 12, 2, 3), line: '' });
  assert.equal(parseLine('not a time'), null);
});

if (!engine) {
  test('docker runtime output()', { skip: noEngine() }, () => {});
} else {
  const e = engine;
  describe('docker runtime output()', () => {
    const script = `echo one; echo two >&2; echo three; sleep 1; echo later; trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done`;

    test("a container's stdout and stderr are its output, timed by the engine; tail and since select from them", async () => {
      const t = makeDockerRuntime(e);
      try {
        const before = Date.now() - 1_000;
        await t.runtime.start(instanceSpec({ id: 'out1', image: e.images.idle, args: `/bin/sh -c "${script}"` }));
        const lines = await waitFor('four lines', async () => {
          const got = await collect(t.runtime, 'out1');
          return got.length >= 4 ? got : null;
        });
        assert.deepEqual(lines.map((l) => l.line).sort(), ['later', 'one', 'three', 'two']);
        assert.ok(
          lines.every((l) => l.ts >= before && l.ts <= Date.now() + 1_000),
          'the engine times are now',
        );
        assert.deepEqual(
          (await collect(t.runtime, 'out1', { tail: 1 })).map((l) => l.line),
          ['later'],
        );
        const later = lines.find((l) => l.line === 'later')!;
        assert.deepEqual(
          (await collect(t.runtime, 'out1', { sinceMs: later.ts })).map((l) => l.line),
          ['later'],
        );
        assert.deepEqual(
          (await collect(t.runtime, 'out1', { sinceMs: before, tail: 1 })).map((l) => l.line),
          ['later'],
        );
        // what the engine keeps is bounded by default: json-file rotation at 10 MiB, two files
        const info = (await e.client.inspectContainer(`gantry-${t.namespace}-out1`)) as unknown as {
          HostConfig: { LogConfig?: { Type: string; Config: Record<string, string> } };
        };
        const driver = ((await e.client.info()) as { LoggingDriver?: string }).LoggingDriver;
        if (driver === 'json-file')
          assert.deepEqual(info.HostConfig.LogConfig, {
            Type: 'json-file',
            Config: { 'max-size': String(10 * 1024 * 1024), 'max-file': '2' },
          });
      } finally {
        await t.cleanup();
      }
    });

    test('a follower gets lines as they are written and ends when the container stops; a stopped container keeps its output until removed', async () => {
      const t = makeDockerRuntime(e);
      try {
        await t.runtime.start(instanceSpec({ id: 'out2', image: e.images.idle, args: `/bin/sh -c "${script}"` }));
        const got: string[] = [];
        const following = (async () => {
          for await (const l of t.runtime.output('out2', { follow: true, signal: new AbortController().signal }))
            got.push(l.line);
        })();
        await waitFor('the live line', () => got.includes('later'));
        await t.runtime.stop('out2');
        await following;
        assert.deepEqual([...got].sort(), ['later', 'one', 'three', 'two']);
        assert.equal((await collect(t.runtime, 'out2')).length, 4, 'the output of a stopped container stays readable');
        await t.runtime.remove('out2');
        assert.deepEqual(await collect(t.runtime, 'out2'), []);
        assert.deepEqual(await collect(t.runtime, 'nobody'), []);
      } finally {
        await t.cleanup();
      }
    });

    test('followers of one container share one Engine API follow of its log: each gets its own tail first, then the live lines, in order, with nothing missed or repeated; the follow closes when the last leaves', async () => {
      if (!DOCKER_HOST.startsWith('unix://')) return;
      // Connections to the engine are counted on a proxy in front of it.
      const proxy = new UnixSocketProxy(DOCKER_HOST.slice('unix://'.length));
      await proxy.start();
      const t = makeDockerRuntime(e, { dockerHost: `unix://${proxy.path}` });
      const follows = () => proxy.openMatching(/\/logs\?.*follow=true/);
      const followers: Array<{ tail: number; got: number[]; stop: AbortController; done: Promise<void> }> = [];
      try {
        // A line a number, a few in each millisecond now and then.
        const counter = `i=0; while :; do echo $i; i=$((i+1)); echo $i; i=$((i+1)); echo $i; i=$((i+1)); sleep 0.01; done`;
        await t.runtime.start(instanceSpec({ id: 'out4', image: e.images.idle, args: `/bin/sh -c "${counter}"` }));
        await waitFor('some output', async () => (await collect(t.runtime, 'out4')).length >= 10);
        for (let k = 0; k < 12; k++) {
          const tail = 1 + (k % 5);
          const stop = new AbortController();
          const got: number[] = [];
          const done = (async () => {
            for await (const l of t.runtime.output('out4', { follow: true, tail, signal: stop.signal }))
              got.push(Number(l.line));
          })();
          followers.push({ tail, got, stop, done });
          await waitFor(`follower ${k} reads live lines`, () => got.length > tail);
          assert.equal(follows(), 1, `one follow of the engine with ${k + 1} followers`);
        }
        const last = Math.max(...followers.map((f) => f.got[f.got.length - 1]!)) + 30;
        await waitFor('every follower reads on', () => followers.every((f) => f.got.includes(last)));
        assert.equal(follows(), 1, 'still one follow of the engine');
        assert.equal(
          proxy.requests.filter((r) => /\/logs\?.*follow=true/.test(r)).length,
          1,
          'one follow was ever opened',
        );
        for (const [k, f] of followers.entries()) {
          const seen = f.got.slice(0, f.got.indexOf(last) + 1);
          assert.ok(
            seen.every((n, i) => i === 0 || n === seen[i - 1]! + 1),
            `follower ${k} (tail ${f.tail}) read every line once, in order: ${seen.slice(0, 40).join(' ')}`,
          );
        }
        for (const f of followers) f.stop.abort();
        await Promise.all(followers.map((f) => f.done));
        await waitFor('the follow is closed', () => follows() === 0);
      } finally {
        for (const f of followers) f.stop.abort();
        await t.cleanup();
        await proxy.close();
      }
    });

    test('a reader that leaves ends the follow at once', async () => {
      const t = makeDockerRuntime(e);
      try {
        await t.runtime.start(instanceSpec({ id: 'out3', image: e.images.idle, args: `/bin/sh -c "${script}"` }));
        const abort = new AbortController();
        const got: string[] = [];
        const following = (async () => {
          for await (const l of t.runtime.output('out3', { follow: true, signal: abort.signal })) {
            got.push(l.line);
            if (got.length === 1) abort.abort();
          }
        })();
        await following;
        assert.equal(got.length, 1);
      } finally {
        await t.cleanup();
      }
    });
  });
}
