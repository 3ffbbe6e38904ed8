import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StartSlots } from './start-slots.js';

test('no more than the slots run at once, the rest run in the order they came, and a failure frees its slot', async () => {
  const slots = new StartSlots(2);
  let running = 0;
  let peak = 0;
  const order: number[] = [];
  const releases: Array<() => void> = [];
  const task =
    (n: number, fail = false) =>
    () =>
      new Promise<number>((resolve, reject) => {
        running++;
        peak = Math.max(peak, running);
        order.push(n);
        releases.push(() => {
          running--;
          if (fail) reject(new Error(`task ${n} failed`));
          else resolve(n);
        });
      });
  const results = [slots.run(task(0, true)), slots.run(task(1)), slots.run(task(2)), slots.run(task(3))].map((p) =>
    p.catch((err: Error) => err.message),
  );
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, [0, 1]);
  assert.equal(slots.queued, 2);
  while (releases.length > 0) {
    releases.shift()!();
    await new Promise((r) => setImmediate(r));
  }
  assert.deepEqual(await Promise.all(results), ['task 0 failed', 1, 2, 3]);
  assert.deepEqual(order, [0, 1, 2, 3]);
  assert.equal(peak, 2);
});
