import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GroupCommit } from './group-commit.js';

/** A commit whose transactions finish only when the test says so. */
function controllableCommit<T>() {
  const batches: T[][] = [];
  const gates: Array<{ resolve(): void; reject(err: Error): void }> = [];
  const commit = (items: readonly T[]): Promise<T[]> => {
    batches.push([...items]);
    return new Promise<T[]>((resolve, reject) => gates.push({ resolve: () => resolve([...items]), reject }));
  };
  return { batches, gates, commit };
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

test('items added together while idle are committed in one transaction', async () => {
  const commits: number[][] = [];
  const gc = new GroupCommit<number, string>({
    commit: async (items) => (commits.push([...items]), items.map((i) => `r${i}`)),
  });
  const results = await Promise.all([1, 2, 3].map((i) => gc.add(i)));
  assert.deepEqual(results, ['r1', 'r2', 'r3']);
  assert.deepEqual(commits, [[1, 2, 3]]);
});

test('items arriving while a flush is in flight are coalesced into the next transaction', async () => {
  const c = controllableCommit<number>();
  const gc = new GroupCommit<number, number>({ commit: c.commit });
  const first = gc.add(0);
  await turn();
  assert.deepEqual(c.batches, [[0]]);
  const rest = Array.from({ length: 50 }, (_, i) => gc.add(i + 1));
  await turn();
  assert.equal(c.batches.length, 1, 'nothing else starts while the first transaction is open');
  c.gates[0]!.resolve();
  await first;
  await turn();
  assert.equal(c.batches.length, 2);
  assert.equal(c.batches[1]!.length, 50);
  c.gates[1]!.resolve();
  assert.equal((await Promise.all(rest)).length, 50);
  assert.deepEqual(gc.stats, { batches: 2, items: 51, failedBatches: 0 });
});

test('no caller resolves before its transaction committed', async () => {
  const c = controllableCommit<string>();
  const gc = new GroupCommit<string, string>({ commit: c.commit });
  let resolved = false;
  const p = gc.add('a').then(() => (resolved = true));
  for (let i = 0; i < 5; i++) await turn();
  assert.equal(resolved, false);
  c.gates[0]!.resolve();
  await p;
  assert.equal(resolved, true);
});

test('a failing transaction rejects exactly its own callers', async () => {
  const c = controllableCommit<number>();
  const gc = new GroupCommit<number, number>({ commit: c.commit });
  const a = gc.add(1);
  await turn();
  const b = gc.add(2);
  const cc = gc.add(3);
  c.gates[0]!.reject(new Error('disk full'));
  await assert.rejects(a, /disk full/);
  await turn();
  c.gates[1]!.resolve();
  assert.deepEqual(await Promise.all([b, cc]), [2, 3]);
  assert.equal(gc.stats.failedBatches, 1);
});

test('a batch never exceeds the maximum batch size', async () => {
  const sizes: number[] = [];
  const gc = new GroupCommit<number, number>({
    maxBatchSize: 10,
    commit: async (items) => (sizes.push(items.length), [...items]),
  });
  await Promise.all(Array.from({ length: 35 }, (_, i) => gc.add(i)));
  assert.deepEqual(sizes, [10, 10, 10, 5]);
});

test('a commit answering the wrong number of results rejects its callers', async () => {
  const gc = new GroupCommit<number, number>({ commit: async () => [] });
  await assert.rejects(gc.add(1), /0 results for 1 items/);
});

test('with concurrency 2, two transactions may be open at once and both batches resolve', async () => {
  const c = controllableCommit<number>();
  const gc = new GroupCommit<number, number>({ commit: c.commit, concurrency: 2, maxBatchSize: 2 });
  const all = Array.from({ length: 4 }, (_, i) => gc.add(i));
  await turn();
  assert.equal(c.batches.length, 2);
  c.gates[1]!.resolve();
  c.gates[0]!.resolve();
  assert.deepEqual(await Promise.all(all), [0, 1, 2, 3]);
});

test('idle() resolves once everything queued has been committed', async () => {
  let committed = 0;
  const gc = new GroupCommit<number, number>({ commit: async (items) => ((committed += items.length), [...items]) });
  for (let i = 0; i < 7; i++) void gc.add(i);
  await gc.idle();
  assert.equal(committed, 7);
  assert.equal(gc.waiting, 0);
});
