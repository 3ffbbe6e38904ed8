import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../domain/clock.js';
import { isApiError } from '../domain/errors.js';
import { ResourceQuota } from './resource-quota.js';

/** A store whose holdings the test sets, counting its reads. */
function fixture(quotas = { pods: 100, gpus: 4 }) {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const store = { held: { pods: 0, gpus: 0 }, reads: 0 };
  const quota = new ResourceQuota({
    clock,
    quotas,
    holdings: {
      holdings: async () => {
        store.reads++;
        return { ...store.held };
      },
    },
  });
  return { clock, store, quota };
}

test('concurrent admissions cannot together take more GPUs than the quota, and they run at once, not one by one', async () => {
  const { store, quota } = fixture({ pods: 100, gpus: 4 });
  let running = 0;
  let most = 0;
  const step = async (): Promise<string> => {
    running++;
    most = Math.max(most, running);
    await new Promise((r) => setImmediate(r));
    running--;
    store.held.gpus += 1;
    return 'placed';
  };
  const results = await Promise.all(Array.from({ length: 10 }, () => quota.tryAdmit('a', { pods: 1, gpus: 1 }, step)));
  assert.equal(results.filter((r) => r.ok).length, 4);
  assert.match((results.find((r) => !r.ok) as { reason: string }).reason, /quotas\.gpus/);
  assert.ok(most > 1, 'the admitted steps ran concurrently');
});

test('an account’s holdings are read once per refresh interval, not once per admission', async () => {
  const { clock, store, quota } = fixture();
  for (let i = 0; i < 50; i++) await quota.admit('a', { pods: 1, gpus: 0 }, async () => undefined);
  assert.equal(store.reads, 1);
  clock.advance(1000);
  await quota.admit('a', { pods: 1, gpus: 0 }, async () => undefined);
  assert.equal(store.reads, 2);
});

test('what was admitted since the last read counts until a read includes it, and then only once', async () => {
  const { clock, store, quota } = fixture({ pods: 100, gpus: 3 });
  await quota.admit('a', { pods: 1, gpus: 2 }, async () => undefined); // committed, not yet in the read
  await assert.rejects(
    quota.admit('a', { pods: 1, gpus: 2 }, async () => undefined),
    (err) => isApiError(err) && err.code === 'RESOURCE_QUOTA_EXCEEDED',
  );
  store.held = { pods: 1, gpus: 2 };
  clock.advance(1000);
  assert.equal(await quota.admit('a', { pods: 1, gpus: 1 }, async () => 'fits'), 'fits', 'the first pod counted twice');
});

test('a step that fails gives its reservation back', async () => {
  const { quota } = fixture({ pods: 100, gpus: 1 });
  await assert.rejects(
    quota.admit('a', { pods: 1, gpus: 1 }, async () => Promise.reject(new Error('no host'))),
    /no host/,
  );
  assert.equal(await quota.admit('a', { pods: 1, gpus: 1 }, async () => 'placed'), 'placed');
});

test('a release makes the next admission read the store again, so freed room shows at once', async () => {
  const { store, quota } = fixture({ pods: 100, gpus: 1 });
  await quota.admit('a', { pods: 1, gpus: 1 }, async () => void (store.held = { pods: 1, gpus: 1 }));
  await assert.rejects(
    quota.admit('a', { pods: 1, gpus: 1 }, async () => undefined),
    /quotas\.gpus/,
  );
  store.held = { pods: 1, gpus: 0 }; // stopped
  quota.released('a');
  assert.equal(await quota.admit('a', { pods: 1, gpus: 1 }, async () => 'started'), 'started');
});

test('an admission in flight while the holdings are read stays counted beside the read', async () => {
  const { clock, store, quota } = fixture({ pods: 100, gpus: 2 });
  let finish!: () => void;
  const slow = quota.admit('a', { pods: 1, gpus: 2 }, () => new Promise<void>((r) => (finish = r)));
  await new Promise((r) => setImmediate(r));
  clock.advance(1000); // the next admission re-reads while the first has not committed (not in the read)
  await assert.rejects(
    quota.admit('a', { pods: 1, gpus: 1 }, async () => undefined),
    /quotas\.gpus/,
  );
  finish();
  await slow;
  assert.equal(store.reads, 2);
});
