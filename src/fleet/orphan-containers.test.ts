import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { FakeClock } from '../domain/clock.js';
import type { NewOperation } from './protocol.js';
import { MAX_PER_HOST, OrphanContainers } from './orphan-containers.js';

const GRACE = 60_000;

function setup() {
  const clock = new FakeClock(1_000_000);
  const sent: Array<[string, NewOperation]> = [];
  const orphans = new OrphanContainers({
    enqueue: async (hostId, op) => void sent.push([hostId, op]),
    clock,
    logger: pino({ level: 'silent' }),
    graceMs: GRACE,
  });
  return { clock, sent, orphans };
}

describe('containers no record places on their host', () => {
  test('are removed once, on the host that reports them, after the grace and not before', async () => {
    const { clock, sent, orphans } = setup();
    orphans.noted('host-1', { full: true, reported: ['pod-ok', 'stray'], orphans: ['stray'] });
    clock.advance(GRACE - 1);
    await orphans.sweep();
    assert.deepEqual(sent, []);
    clock.advance(1);
    await orphans.sweep();
    await orphans.sweep();
    assert.deepEqual(sent, [['host-1', { kind: 'remove', instanceId: 'stray' }]]);
  });

  test('a full report that no longer lists one forgets it', async () => {
    const { clock, sent, orphans } = setup();
    orphans.noted('host-1', { full: true, reported: ['stray'], orphans: ['stray'] });
    clock.advance(GRACE / 2);
    orphans.noted('host-1', { full: true, reported: [], orphans: [] });
    clock.advance(GRACE);
    await orphans.sweep();
    assert.deepEqual(sent, []);
    assert.deepEqual(orphans.followed('host-1'), []);
  });

  test('an id the records come to place on the host (accepted in a later report) is not removed', async () => {
    const { clock, sent, orphans } = setup();
    orphans.noted('host-1', { full: true, reported: ['pod-new'], orphans: ['pod-new'] });
    orphans.noted('host-1', { full: false, reported: ['pod-new'], orphans: [] });
    clock.advance(GRACE);
    await orphans.sweep();
    assert.deepEqual(sent, []);
  });

  test('the grace counts from the first report of it, and a delta that does not mention it keeps it', async () => {
    const { clock, sent, orphans } = setup();
    orphans.noted('host-1', { full: true, reported: ['stray'], orphans: ['stray'] });
    clock.advance(GRACE / 2);
    orphans.noted('host-1', { full: false, reported: ['pod-ok'], orphans: [] });
    orphans.noted('host-1', { full: true, reported: ['stray'], orphans: ['stray'] });
    clock.advance(GRACE / 2);
    await orphans.sweep();
    assert.deepEqual(
      sent.map(([, op]) => op),
      [{ kind: 'remove', instanceId: 'stray' }],
    );
  });

  test('a revoked host is sent nothing more', async () => {
    const { clock, sent, orphans } = setup();
    orphans.noted('host-1', { full: true, reported: ['stray'], orphans: ['stray'] });
    orphans.forgetHost('host-1');
    clock.advance(GRACE);
    await orphans.sweep();
    assert.deepEqual(sent, []);
  });

  test('a host reporting thousands of made-up ids is followed for at most a bounded number', async () => {
    const { orphans } = setup();
    const ids = Array.from({ length: MAX_PER_HOST + 500 }, (_, i) => `fake-${i}`);
    orphans.noted('host-1', { full: true, reported: ids, orphans: ids });
    assert.equal(orphans.followed('host-1').length, MAX_PER_HOST);
  });

  test('a removal that cannot be queued is tried again at the next sweep', async () => {
    const clock = new FakeClock(0);
    let fail = true;
    const sent: string[] = [];
    const orphans = new OrphanContainers({
      enqueue: async (_h, op) => {
        if (fail) throw new Error('database away');
        sent.push((op as { instanceId: string }).instanceId);
      },
      clock,
      logger: pino({ level: 'silent' }),
      graceMs: GRACE,
    });
    orphans.noted('host-1', { full: true, reported: ['stray'], orphans: ['stray'] });
    clock.advance(GRACE);
    await orphans.sweep();
    fail = false;
    await orphans.sweep();
    assert.deepEqual(sent, ['stray']);
  });
});
