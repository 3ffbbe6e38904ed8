// Property-based robustness of the agent protocol (/agent/v1, not in the OpenAPI document the
// route fuzzer walks): generated join bodies, reports from a real host, credentials and query
// strings. No answer may be a 5xx, every error is problem+json, a refused join stores nothing,
// and the host's record and queue are as they were. On every store dialect: what only PostgreSQL
// refuses (NUL in text, integers past 64 bits) must be refused before the store.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createTestApp, dialects, type TestApp } from './support/harness.js';
import { capacity, joinBody } from './support/fleet.js';
import type { JoinRequest } from '../src/fleet/protocol.js';

const runs = Number(process.env.FUZZ_RUNS ?? 60);

const weirdString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom(
    '',
    '\u0000',
    'a\u0000b',
    'a'.repeat(5000),
    '__proto__',
    'GPU-\u0000',
    'ghc_host-000000000000_' + 'A'.repeat(32),
    'gjt_' + 'A'.repeat(32),
    "' OR 1=1 --",
  ),
);
const hugeNumber = fc.constantFrom(
  2 ** 31,
  2 ** 53,
  Number.MAX_SAFE_INTEGER + 2,
  1e300,
  -1,
  -1e300,
  0.5,
  Number.MIN_VALUE,
);
const hostile = fc.oneof(weirdString, hugeNumber, fc.jsonValue({ maxDepth: 3 }), fc.constant(null));
const capacityFields = [
  'vcpus',
  'memoryGb',
  'diskGb',
  'gpus',
  'cudaVersion',
  'gpuMode',
  'cpuFlavors',
  'notes',
] as const;

/** A believable capacity with one field (or one GPU's field) replaced by something hostile. */
const hostileCapacity = fc.oneof(
  fc.tuple(fc.constantFrom(...capacityFields), hostile).map(([field, value]) => ({ ...capacity(), [field]: value })),
  fc.tuple(fc.constantFrom('uuid', 'name', 'memoryMb'), hostile).map(([field, value]) => {
    const c = capacity();
    return { ...c, gpus: [{ ...c.gpus[0]!, [field]: value }] };
  }),
  hostile,
);

function assertProblem(
  res: { statusCode: number; headers: Record<string, unknown>; body: string },
  label: string,
): void {
  assert.ok(res.statusCode < 500, `${label} answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
  if (res.statusCode >= 400) {
    assert.match(String(res.headers['content-type']), /application\/problem\+json/, `${label}: not problem+json`);
    const problem = JSON.parse(res.body) as { status: number; detail: string; code: string };
    assert.equal(problem.status, res.statusCode, label);
    assert.ok(problem.detail && problem.code, label);
  }
}

let address = 0;
/** Every request from its own address: the failure limits would otherwise answer 429 to most. */
const nextAddress = (): string => `10.${(address >> 16) & 255}.${(address >> 8) & 255}.${address++ & 255}`;

for (const dialect of dialects()) {
  describe(`the agent protocol under generated input, on ${dialect.name}`, { skip: dialect.skip }, () => {
    let t: TestApp;
    let credential: string;
    let hostId: string;

    before(async () => {
      t = await createTestApp({ dialect: dialect.name });
      const { token } = await t.services.fleet.createJoinToken();
      const joined = await t.services.fleet.join(joinBody(token) as unknown as JoinRequest);
      ({ credential, hostId } = joined);
    });
    after(() => t?.close());

    test('no generated join body answers 5xx, and none joins a host without its token', async () => {
      const { token } = await t.services.fleet.createJoinToken();
      const hosts = (await t.services.fleet.list()).length;
      const bodies = fc.oneof(
        fc
          .tuple(
            fc.constantFrom('token', 'name', 'publicIp', 'portRange', 'agentVersion', 'capacity', 'extra'),
            hostile,
          )
          .map(([field, value]) => JSON.stringify({ ...joinBody(`gjt_${'W'.repeat(32)}`), [field]: value })),
        hostileCapacity.map((c) => JSON.stringify(joinBody(token, { capacity: c }))),
        fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
        weirdString,
      );
      await fc.assert(
        fc.asyncProperty(bodies, async (payload) => {
          const res = await t.app.inject({
            method: 'POST',
            url: '/agent/v1/join',
            remoteAddress: nextAddress(),
            headers: { 'content-type': 'application/json' },
            payload,
          });
          assertProblem(res, payload.slice(0, 200));
          if (res.statusCode === 201) assert.ok(payload.includes(token), 'only the real token joins');
        }),
        { numRuns: runs * 3, includeErrorInReport: true },
      );
      assert.ok((await t.services.fleet.list()).length <= hosts + 1);
    });

    test("no generated report answers 5xx, and a refused one leaves the host's capacity and queue as they were", async () => {
      const before = (await t.services.fleet.get(hostId))!.capacity;
      const op = await t.services.fleet.enqueue(hostId, { kind: 'stop', instanceId: 'pod-kept' });
      const item = fc.record({
        id: hostile,
        owner: fc.oneof(hostile, fc.constant({ kind: 'pod', accountId: 'a' })),
        state: fc.oneof(hostile, fc.constant('running')),
        startedAt: hostile,
        exitCode: hostile,
        reason: hostile,
      });
      const reports = fc.oneof(
        hostileCapacity.map((c) => ({ capacity: c })),
        fc.array(fc.record({ opId: hostile, ok: hostile, error: hostile }), { maxLength: 3 }).map((acks) => ({ acks })),
        fc.tuple(hostile, fc.array(item, { maxLength: 3 })).map(([full, items]) => ({ instances: { full, items } })),
        // utilisation figures: hostile ids, figures of every kind, GPUs lists of every shape
        fc
          .dictionary(
            fc.oneof(weirdString, fc.constant('pod-kept')),
            fc.oneof(
              hostile,
              fc.record({
                cpuUtil: hostile,
                memoryUtil: hostile,
                memoryBytes: hostile,
                gpus: fc.oneof(hostile, fc.array(fc.record({ util: hostile, memoryUtil: hostile }), { maxLength: 3 })),
              }),
            ),
          )
          .map((stats) => ({ stats })),
        fc.jsonValue({ maxDepth: 3 }),
      );
      await fc.assert(
        fc.asyncProperty(reports, async (report) => {
          const payload = JSON.stringify(report);
          const res = await t.app.inject({
            method: 'POST',
            url: '/agent/v1/report',
            remoteAddress: nextAddress(),
            headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
            payload,
          });
          assertProblem(res, payload.slice(0, 200));
        }),
        { numRuns: runs * 3, includeErrorInReport: true },
      );
      const after = (await t.services.fleet.get(hostId))!.capacity;
      // a report may have changed it to another believable capacity; never to something refused
      assert.ok(after.vcpus >= 1 && after.gpus.every((g) => /^GPU-[0-9a-fA-F-]+$/.test(g.uuid)), JSON.stringify(after));
      if (JSON.stringify(after) !== JSON.stringify(before)) assert.ok(after.memoryGb >= 0.5);
      assert.deepEqual(
        (await t.services.fleet.pending(hostId, 0)).map((o) => o.id).includes(op.id),
        true,
        'no generated ack took the operation',
      );
    });

    test('no generated credential or query string answers 5xx', async () => {
      const credentials = fc.oneof(
        weirdString.map((s) => s.replace(/[^\t\x20-\x7e]/g, '')),
        fc.constant(credential),
        weirdString.map((s) => `ghc_${hostId}_${s.replace(/[^\x21-\x7e]/g, '')}`),
      );
      const query = fc.dictionary(
        fc.constantFrom('after', 'waitMs', 'x', 'api_key'),
        fc.oneof(weirdString, hugeNumber.map(String), fc.constantFrom('0', '1', '-1', '0x10')),
        { maxKeys: 3 },
      );
      await fc.assert(
        fc.asyncProperty(credentials, query, async (presented, q) => {
          // a valid waitMs up to 30 s would hold the run: generated ones wait at most 10 ms
          const params = new URLSearchParams(q);
          const wait = Number(params.get('waitMs'));
          if (Number.isInteger(wait) && wait > 10) params.set('waitMs', '10');
          const res = await t.app.inject({
            method: 'GET',
            url: `/agent/v1/operations?${params.toString()}`,
            remoteAddress: nextAddress(),
            headers: { authorization: `Bearer ${presented}` },
          });
          assertProblem(res, `${presented.slice(0, 60)} ${params.toString().slice(0, 100)}`);
        }),
        { numRuns: runs * 3, includeErrorInReport: true },
      );
    });
  });
}
