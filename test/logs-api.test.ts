// Logs as Server-Sent Events over a real server, read with fetch: backfill, live-only, since,
// resume with Last-Event-ID, the source filter, system lines of a failed pod, the end of the
// stream when the pod stops, tenant 404s and parameter checks. Pods run as real processes.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestApp, json, type TestApp } from './support/harness.js';
import { readSse, type SseEvent, type SseOptions, type SseRead } from './support/sse-client.js';
import { FakeClock } from '../src/domain/clock.js';
import { buildApp } from '../src/http/app.js';
import { LogStreams } from '../src/logs/log-streams.js';

const GPU = 'NVIDIA GeForce RTX 4090';
const images = {
  // three lines, then one more each time a file `more` appears in its folder
  'logger:1': {
    command: [
      process.execPath,
      '-e',
      'console.log("one"); console.error("two"); console.log("three"); const fs = require("fs"); let n = 0; setInterval(() => { if (fs.existsSync("more")) { fs.unlinkSync("more"); console.log("more " + ++n); } }, 20)',
    ],
  },
  'broken:1': { command: ['/nonexistent/gantry-test-binary'] },
};
const fleet = [
  {
    id: 'big',
    dataCenterId: 'US-TX-3',
    gpuTypeId: GPU,
    gpuCount: 64,
    cudaVersion: '12.4',
    vcpus: 256,
    memoryGb: 2048,
    portRange: [32000, 32999],
  },
];
const file = {
  images,
  fleet,
  pods: { reconcileIntervalMs: 50, stopGraceMs: 1000 },
  rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 },
};

const T0 = Date.UTC(2026, 5, 1, 12, 0, 0);
const parse = (e: SseEvent) => JSON.parse(e.data) as { ts: string; source: string; line: string };
const linesOf = (events: SseEvent[]) => events.map((e) => parse(e).line);

describe('pod logs as server-sent events', () => {
  let t: TestApp;
  let clock: FakeClock;
  let base: string;
  let key: string;
  let other: string;
  let podId: string;
  const auth = (k: string) => ({ authorization: `Bearer ${k}` });
  const url = (id: string, query = '') => `${base}/v2/pods/${id}/logs${query}`;
  const more = (id: string) => writeFileSync(join(t.config.dataDir, 'instances', id, 'more'), '');
  const waitFor = async <T>(what: string, check: () => Promise<T | null | undefined | false>): Promise<T> => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const v = await check();
      if (v) return v;
      if (Date.now() > deadline) assert.fail(`${what} did not happen within 10 s`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const create = async (image: string): Promise<string> => {
    const res = await t.request(key, 'POST', '/v2/pods', { name: 'logs', image, gpu: { id: GPU } });
    assert.equal(res.statusCode, 201, res.body);
    return json(res).id;
  };
  const containerLines = async (id: string): Promise<string[]> => {
    const out: string[] = [];
    for await (const l of t.services.runtime.output!(id, { follow: false, signal: new AbortController().signal }))
      out.push(l.line);
    return out;
  };
  const statusOf = async (id: string): Promise<string> => json(await t.request(key, 'GET', `/v2/pods/${id}`)).status;
  /**
   * Reads a stream as `readSse` does, from the same route over the same services, and runs
   * `whileFollowed` once the stream follows the pod's output: its streams begin to follow only
   * after the lines already kept are read, so a line written then is a live one.
   */
  const readFollowed = async (
    path: string,
    options: Omit<SseOptions, 'onOpen'>,
    whileFollowed: () => Promise<void> | void,
  ): Promise<SseRead> => {
    const runtime = t.services.runtime;
    let followed!: () => void;
    const following = new Promise<void>((resolve) => (followed = resolve));
    const logs = new LogStreams({
      runtime: {
        output: (id, query) => {
          if (query.follow) followed();
          return runtime.output!(id, query);
        },
      },
      systemLog: t.services.systemLog,
      clock,
    });
    const app = await buildApp({ ...t.services, logs }, { logger: false });
    try {
      const at = await app.listen({ port: 0, host: '127.0.0.1' });
      return await readSse(`${at}${path}`, {
        ...options,
        onOpen: async () => {
          await following;
          await whileFollowed();
        },
      });
    } finally {
      await app.close();
    }
  };
  /** The kept lines of a running pod: read until `count` events came. */
  const kept = (id: string, query: string, count: number, headers: Record<string, string> = {}) =>
    readSse(url(id, query), { headers: { ...auth(key), ...headers }, until: (events) => events.length >= count });

  before(async () => {
    clock = new FakeClock(T0);
    t = await createTestApp({ clock, file });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    key = (await t.newAccount('logs')).key;
    other = (await t.newAccount('intruder')).key;
    podId = await create('logger:1');
    await waitFor('the pod runs', async () => (await statusOf(podId)) === 'RUNNING');
    await waitFor('its first lines are kept', async () => (await containerLines(podId)).length === 3);
  });
  after(() => t.close());

  test('the stream answers with the SSE headers and each event carries an id <ts>/<ordinal> and {ts, source, line}', async () => {
    const read = await kept(podId, '?source=container', 3);
    assert.equal(read.status, 200);
    assert.match(read.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(read.headers.get('cache-control'), 'no-cache');
    assert.equal(read.headers.get('x-accel-buffering'), 'no');
    assert.deepEqual(linesOf(read.events), ['one', 'two', 'three']);
    assert.deepEqual(
      read.events.map((e) => e.id),
      [
        '2026-06-01T12:00:00.000Z/000000000000',
        '2026-06-01T12:00:00.000Z/000000000001',
        '2026-06-01T12:00:00.000Z/000000000002',
      ],
    );
    assert.deepEqual(parse(read.events[0]!), { ts: '2026-06-01T12:00:00.000Z', source: 'container', line: 'one' });
  });

  test('tail backfills only the last lines, merged from both sources in time order by default', async () => {
    const read = await kept(podId, '?source=container&tail=2', 2);
    assert.deepEqual(linesOf(read.events), ['two', 'three']);
    const both = await kept(podId, '?tail=100', 5);
    const sources = both.events.map((e) => parse(e).source);
    assert.ok(sources.includes('system') && sources.includes('container'), `both sources: ${sources.join(',')}`);
    assert.match(linesOf(both.events)[0]!, /^placed on host big \(US-TX-3\)/);
  });

  test('the source filter gives only the lines of that source', async () => {
    const read = await kept(podId, '?source=system', 2);
    assert.ok(read.events.every((e) => parse(e).source === 'system'));
    assert.deepEqual(linesOf(read.events), [linesOf(read.events)[0], 'started']);
  });

  test('tail=0 streams live lines only, as they are written', async () => {
    clock.set(T0 + 1_000);
    const read = await readFollowed(
      `/v2/pods/${podId}/logs?tail=0&source=container`,
      { headers: auth(key), until: (events) => events.length >= 1 },
      () => more(podId),
    );
    assert.equal(read.events.length, 1);
    assert.match(linesOf(read.events)[0]!, /^more \d+$/);
    assert.equal(parse(read.events[0]!).ts, '2026-06-01T12:00:01.000Z');
  });

  test('since starts at that time (inclusive), over tail', async () => {
    const read = await kept(podId, `?source=container&tail=1&since=${encodeURIComponent('2026-06-01T12:00:01Z')}`, 1);
    assert.match(linesOf(read.events)[0]!, /^more \d+$/);
    const earlier = await kept(podId, `?source=container&since=2026-06-01T12:00:00Z`, 4);
    assert.deepEqual(linesOf(earlier.events).slice(0, 3), ['one', 'two', 'three']);
  });

  test('Last-Event-ID resumes after the last event seen: no line repeated or lost, over since and tail', async () => {
    clock.set(T0 + 2_000);
    more(podId);
    await waitFor('the second new line is kept', async () => (await containerLines(podId)).length === 5);
    const total = (await t.services.systemLog.read(podId)).length + 5;
    const full = await kept(podId, '?tail=5000', total);
    assert.equal(full.events.length, total);
    for (const cut of [1, 3, total - 1]) {
      const resumed = await kept(podId, '?tail=1&since=2026-06-01T11:00:00Z', total - cut, {
        'last-event-id': full.events[cut - 1]!.id!,
      });
      assert.deepEqual(
        resumed.events.map((e) => `${e.id} ${e.data}`),
        full.events.slice(cut).map((e) => `${e.id} ${e.data}`),
        `resumed after event ${cut}`,
      );
    }
    // resumed at the end, a reconnect gets only what is written after
    clock.set(T0 + 3_000);
    const live = await readFollowed(
      `/v2/pods/${podId}/logs`,
      {
        headers: { ...auth(key), 'last-event-id': full.events[total - 1]!.id! },
        until: (events) => events.length >= 1,
      },
      () => more(podId),
    );
    assert.deepEqual(linesOf(live.events), ['more 3']);
    // a plain RFC3339 Last-Event-ID: everything after that time
    const plain = await kept(podId, '?source=container', 1, { 'last-event-id': '2026-06-01T12:00:01.000Z' });
    assert.equal(parse(plain.events[0]!).ts, '2026-06-01T12:00:02.000Z');
  });

  test('an idle stream carries keep-alive comment lines on an interval, so proxies do not cut it', async () => {
    const logs = new LogStreams({
      runtime: t.services.runtime,
      systemLog: t.services.systemLog,
      clock,
      keepAliveMs: 50,
    });
    const app = await buildApp({ ...t.services, logs }, { logger: false });
    try {
      const at = await app.listen({ port: 0, host: '127.0.0.1' });
      const read = await readSse(`${at}/v2/pods/${podId}/logs?tail=0`, {
        headers: auth(key),
        until: (_events, comments) => comments.length >= 2,
      });
      assert.deepEqual(read.events, []);
      assert.deepEqual(read.comments.slice(0, 2), ['keep-alive', 'keep-alive']);
    } finally {
      await app.close();
    }
  });

  test('the stream ends when the pod stops while followed, its last line saying so; a stopped pod sends what is kept and ends', async () => {
    const read = await readFollowed(`/v2/pods/${podId}/logs?tail=0`, { headers: auth(key) }, async () => {
      assert.equal((await t.request(key, 'POST', `/v2/pods/${podId}/action`, { action: 'stop' })).statusCode, 200);
    });
    assert.equal(read.ended, true);
    assert.deepEqual(linesOf(read.events).slice(-1), ['stopped by user']);
    const after = await readSse(url(podId, '?source=container'), { headers: auth(key) });
    assert.equal(after.ended, true);
    assert.deepEqual(
      linesOf(after.events).slice(0, 3),
      ['one', 'two', 'three'],
      'the output of a stopped pod stays readable',
    );
  });

  test('a pod in ERROR says why in its system lines, and its stream ends', async () => {
    const id = await create('broken:1');
    await waitFor('the pod fails', async () => (await statusOf(id)) === 'ERROR');
    const read = await readSse(url(id, '?source=system'), { headers: auth(key) });
    assert.equal(read.ended, true);
    const lines = linesOf(read.events);
    assert.match(lines[0]!, /^placed on host big \(US-TX-3\); pulling \(if needed\) and starting image broken:1$/);
    assert.match(lines[lines.length - 1]!, /^ERROR: .*(nonexistent|ENOENT|not found)/i);
  });

  test("another account's pod and an unknown pod are a 404, the same as their GET", async () => {
    for (const [k, id] of [
      [other, podId],
      [key, 'nosuchpod'],
    ] as const) {
      const read = await readSse(url(id), { headers: auth(k) });
      assert.equal(read.status, 404);
      assert.equal(read.headers.get('content-type'), 'application/problem+json; charset=utf-8');
      assert.equal(json({ body: read.body } as never).status, 404);
      assert.ok(!read.body.includes('logs'), read.body);
    }
  });

  test('a bad tail, since, source or Last-Event-ID is a 400 problem saying what is wrong', async () => {
    const cases: Array<[string, Record<string, string>, RegExp]> = [
      ['?tail=-1', {}, /tail/],
      ['?tail=5001', {}, /tail/],
      ['?tail=abc', {}, /tail/],
      ['?since=yesterday', {}, /since "yesterday" is not an RFC3339 time/],
      ['?since=2026-06-01', {}, /RFC3339/],
      ['?source=stdout', {}, /source/],
      ['', { 'last-event-id': 'garbage' }, /Last-Event-ID "garbage"/],
    ];
    for (const [query, headers, detail] of cases) {
      const res = await t.request(key, 'GET', `/v2/pods/${podId}/logs${query}`, undefined, headers);
      assert.equal(res.statusCode, 400, `${query} ${JSON.stringify(headers)}: ${res.body}`);
      assert.match(String(res.headers['content-type']), /application\/problem\+json/);
      assert.match(json(res).detail, detail);
    }
  });

  test('hostile log parameters are refused with a 400 that echoes at most a short piece of them, never a 500', async () => {
    const huge = 'x'.repeat(8_000);
    const cases: Array<[string, Record<string, string>]> = [
      [`?since=${huge}`, {}],
      ['', { 'last-event-id': `2026-06-01T12:00:00Z/${'9'.repeat(40)}` }],
      ['', { 'last-event-id': huge }],
      ['', { 'last-event-id': '2026-06-01T12:00:00Z/-1' }],
      ['?since=2026-13-45T99:99:99Z', {}],
      ['?since=%00', {}],
      ['?tail=1.5', {}],
      ['?tail=1&tail=2', {}],
      ['?follow=1', {}],
      ['?source=container&source=system', {}],
    ];
    for (const [query, headers] of cases) {
      const res = await t.request(key, 'GET', `/v2/pods/${podId}/logs${query}`, undefined, headers);
      assert.equal(
        res.statusCode,
        400,
        `${query.slice(0, 60)} ${JSON.stringify(headers).slice(0, 60)}: ${res.body.slice(0, 300)}`,
      );
      assert.ok(res.body.length < 1_000, `the answer echoes the input: ${res.body.length} bytes`);
    }
    // ids are checked before anything is read: an id with a path in it is refused like any bad id
    for (const path of [`/v2/pods/..%2F..%2Fetc/logs`, `/v2/serverless/x/workers/..%2Fpasswd/logs`]) {
      const res = await t.request(key, 'GET', path);
      assert.ok(res.statusCode === 400 || res.statusCode === 404, `${path}: ${res.statusCode}`);
    }
  });
});
