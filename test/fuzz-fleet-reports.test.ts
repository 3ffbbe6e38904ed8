// A host's agent is not trusted with other hosts' instances: whatever a host reports or
// acknowledges (ids of another host's instances, ids it was never given, forged operation ids,
// bogus states, kept markers, full reports that leave everything out), the instances of other
// hosts read exactly as before, and the host's own instances only ever take states of the port;
// its answers tell another host's instance from an id never placed in no way.
// The FleetRuntime is driven directly (the /agent/v1 routes in front of it have their own tests).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import pino from 'pino';
import { FakeClock } from '../src/domain/clock.js';
import { FleetRuntime, type PlacedInstance } from '../src/fleet/fleet-runtime.js';
import type { InstanceReport, NewOperation } from '../src/fleet/protocol.js';
import { instanceSpec } from '../src/runtime/runtime-contract.js';

const STATES = ['starting', 'running', 'exited', 'failed', 'unknown'] as const;

test('nothing a host reports or acknowledges changes another host’s instances, its own only take states of the port, and its answers read alike for another host’s instance and an unknown id', async () => {
  const idArb = fc.oneof(
    fc.constantFrom('a-1', 'a-2', 'b-1', 'b-2', 'never-placed', '', 'x'.repeat(300), '__proto__', 'constructor'),
    fc.string({ maxLength: 12 }),
  );
  const itemArb = fc.record({
    id: idArb,
    state: fc.oneof(fc.constantFrom(...STATES), fc.string({ maxLength: 8 })),
    kept: fc.option(fc.boolean(), { nil: undefined }),
    reason: fc.option(fc.string({ maxLength: 30 }), { nil: null }),
    exitCode: fc.option(fc.integer(), { nil: null }),
  });
  const messageArb = fc.record({
    full: fc.boolean(),
    items: fc.array(itemArb, { maxLength: 6 }),
    acks: fc.array(
      fc.record({
        opId: fc.oneof(fc.constantFrom('op-1', 'op-2', 'op-3', 'op-4'), fc.string({ maxLength: 6 })),
        ok: fc.boolean(),
        error: fc.string({ maxLength: 10 }),
      }),
      { maxLength: 3 },
    ),
  });
  await fc.assert(
    fc.asyncProperty(fc.array(messageArb, { minLength: 1, maxLength: 8 }), async (messages) => {
      const placed = new Map<string, PlacedInstance>();
      let seq = 0;
      const runtime = new FleetRuntime({
        enqueue: async (_hostId: string, op: NewOperation) => {
          seq += 1;
          return { ...op, id: `op-${seq}`, seq };
        },
        placements: {
          placed: async (ids) => new Map(ids.flatMap((id) => (placed.has(id) ? [[id, placed.get(id)!] as const] : []))),
        },
        clock: new FakeClock(),
        logger: pino({ level: 'silent' }),
      });
      for (const [id, hostId] of [
        ['a-1', 'host-a'],
        ['a-2', 'host-a'],
        ['b-1', 'host-b'],
        ['b-2', 'host-b'],
      ] as const) {
        const spec = { ...instanceSpec({ hostId }), id };
        placed.set(id, { hostId, owner: spec.owner });
        await runtime.start(spec);
      }
      await runtime.applyReport('host-b', {
        full: true,
        items: [
          {
            id: 'b-1',
            owner: { kind: 'pod', accountId: 'contract' },
            state: 'running',
            startedAt: 1,
            exitCode: null,
            reason: null,
          },
        ],
      });
      const before = await Promise.all(['a-1', 'a-2'].map((id) => runtime.inspect(id)));
      // why each id of a valid shape and state that is not host-b's own was refused
      const notOwn = new Map<string, string>();
      for (const m of messages) {
        const items = m.items.map(
          (i) => ({ ...i, owner: { kind: 'pod', accountId: 'attacker' }, startedAt: 0 }) as unknown as InstanceReport,
        );
        const refused = await runtime.receive('host-b', { acks: m.acks, instances: { full: m.full, items } });
        for (const r of refused) {
          if (r.reason === 'not an instance id' || r.reason.startsWith('state "')) continue;
          assert.ok(!['b-1', 'b-2'].includes(r.id), `host-b's own ${r.id} was refused: ${r.reason}`);
          assert.ok(!r.reason.includes('host-a'), `a refusal names the other host: ${r.reason}`);
          notOwn.set(r.id, r.reason);
        }
      }
      assert.ok(
        new Set(notOwn.values()).size <= 1,
        `another host's instances and unknown ids read alike: ${JSON.stringify([...notOwn])}`,
      );
      assert.deepEqual(
        await Promise.all(['a-1', 'a-2'].map((id) => runtime.inspect(id))),
        before,
        'host-a’s instances are untouched',
      );
      for (const s of await runtime.list())
        assert.ok((STATES as readonly string[]).includes(s.state), `state ${s.state}`);
      assert.equal(await runtime.inspect('never-placed'), null);
      const attached = await runtime.attach();
      assert.ok(
        attached.every((a) => a.owner?.accountId === 'contract'),
        'no owner an agent claims is taken',
      );
      await runtime.close();
    }),
    { numRuns: 200 },
  );
});
