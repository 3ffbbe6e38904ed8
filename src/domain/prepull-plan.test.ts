import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planPrepull, type PrepullHeld, type PrepullWant } from './prepull-plan.js';

const GB = 1_000_000_000;
const held = (image: string, gb: number, inUse = false): PrepullHeld => ({ image, sizeBytes: gb * GB, inUse });
const sizes = (entries: Record<string, number>) => new Map(Object.entries(entries).map(([k, gb]) => [k, gb * GB]));
const plan = (budgetGb: number, wanted: PrepullWant[], h: PrepullHeld[] = [], known: Record<string, number> = {}) =>
  planPrepull({ budgetBytes: budgetGb * GB, held: h, wanted, sizes: sizes(known) });
const images = (xs: Array<{ image: string }>) => xs.map((x) => x.image);

test('one account alone may take the whole budget, its images in its order, each that fits', () => {
  const p = plan(100, [{ accountId: 'a', images: ['a1', 'a2', 'a3', 'a4'] }], [], { a1: 40, a2: 70, a3: 50, a4: 10 });
  assert.equal(p.shares.get('a'), 100 * GB);
  assert.deepEqual(images(p.pull), ['a1', 'a3', 'a4'], 'a2 does not fit what a1 left; the next ones are tried');
  assert.deepEqual(p.remove, []);
});

test("a second account gets its fair share although the first account's images would take the whole budget", () => {
  const p = plan(
    100,
    [
      { accountId: 'a', images: ['a1', 'a2', 'a3'] },
      { accountId: 'b', images: ['b1'] },
    ],
    [],
    {
      a1: 40,
      a2: 40,
      a3: 20,
      b1: 30,
    },
  );
  assert.equal(p.shares.get('b'), 30 * GB, 'b takes what it needs');
  assert.equal(p.shares.get('a'), 70 * GB, 'what b does not use goes to a');
  assert.deepEqual(images(p.pull), ['a1', 'b1', 'a3'], 'round-robin over the accounts; a2 does not fit what a1 leaves');
});

test('shares are max-min fair: accounts wanting more than an equal part split what the smaller ones leave', () => {
  const p = plan(
    90,
    [
      { accountId: 'a', images: ['a1', 'a2'] },
      { accountId: 'b', images: ['b1', 'b2'] },
      { accountId: 'c', images: ['c1'] },
    ],
    [],
    { a1: 30, a2: 30, b1: 20, b2: 30, c1: 10 },
  );
  // c needs 10 GB; a and b get 40 each, a uses 30 of it (a2 does not fit the rest), b 20: the 30
  // GB left is lent to b, the account using least, and b2 fits it.
  assert.equal(p.shares.get('c'), 10 * GB);
  assert.equal(p.shares.get('a'), 40 * GB);
  assert.equal(p.shares.get('b'), 50 * GB);
  assert.deepEqual(images(p.pull).sort(), ['a1', 'b1', 'b2', 'c1']);
});

test("when a new account arrives on a full host, the over-share account's newest endpoint's image is removed first", () => {
  const h = [held('a1', 30), held('a2', 30), held('a3', 30)];
  const p = plan(
    90,
    [
      { accountId: 'a', images: ['a1', 'a2', 'a3'] },
      { accountId: 'b', images: ['b1'] },
    ],
    h,
    { b1: 30 },
  );
  assert.equal(p.shares.get('a'), 60 * GB);
  assert.deepEqual(p.keep, ['a1', 'a2']);
  assert.deepEqual(images(p.pull), ['b1']);
  assert.deepEqual(
    p.remove.map((r) => [r.image, r.reason, r.accountId]),
    [['a3', 'over-share', 'a']],
  );
});

test('an image a container uses is never removed: it stays in its account’s share, and the account gets nothing more', () => {
  const h = [held('a1', 30, true), held('a2', 30, true), held('a3', 30)];
  const p = plan(
    90,
    [
      { accountId: 'a', images: ['a1', 'a2', 'a3'] },
      { accountId: 'b', images: ['b1', 'b2'] },
    ],
    h,
    {
      b1: 30,
      b2: 30,
    },
  );
  assert.ok(!images(p.remove).includes('a1') && !images(p.remove).includes('a2'));
  assert.deepEqual(images(p.remove), ['a3']);
  assert.deepEqual(images(p.pull), ['b1'], 'b gets what is left: 30 GB');
});

test('an image no account wants is removed unless a container uses it, which then takes its room off the budget', () => {
  const h = [held('old', 50, true), held('gone', 20)];
  const p = plan(100, [{ accountId: 'a', images: ['a1', 'a2'] }], h, { a1: 40, a2: 20 });
  assert.deepEqual(
    p.remove.map((r) => [r.image, r.reason]),
    [['gone', 'unwanted']],
  );
  assert.equal(p.shares.get('a'), 40 * GB, 'of the 50 GB left, a takes what fits');
  assert.deepEqual(images(p.pull), ['a1'], 'a2 does not fit the 10 GB a1 leaves');
});

test('an image no one wants that a container holds counts in the share of the account it was pulled for', () => {
  const h = [{ image: 'old', sizeBytes: 40 * GB, inUse: true, accountId: 'a' }];
  const p = plan(
    100,
    [
      { accountId: 'a', images: ['a1'] },
      { accountId: 'b', images: ['b1', 'b2'] },
    ],
    h,
    {
      a1: 10,
      b1: 30,
      b2: 30,
    },
  );
  assert.equal(p.shares.get('a'), 50 * GB, 'its 40 GB and a1 fill a’s half');
  assert.deepEqual(images(p.pull).sort(), ['a1', 'b1'], 'b’s half is not touched by a’s container');
  const gone = plan(100, [{ accountId: 'b', images: ['b1', 'b2', 'b3'] }], h, { b1: 30, b2: 30, b3: 30 });
  assert.equal(
    gone.shares.get('a'),
    40 * GB,
    'an account that wants nothing any more keeps only what its container holds',
  );
  assert.deepEqual(images(gone.pull), ['b1', 'b2']);
});

test('an image of unknown size reserves what is left of its account’s share, and its account counts as wanting all it may get', () => {
  const p = plan(
    100,
    [
      { accountId: 'a', images: ['a1', 'a2'] },
      { accountId: 'b', images: ['b1', 'b2'] },
    ],
    [],
    {
      a1: 10,
      a2: 10,
    },
  );
  assert.equal(p.shares.get('a'), 20 * GB);
  assert.equal(p.shares.get('b'), 80 * GB);
  assert.deepEqual(p.pull, [
    { image: 'a1', accountId: 'a', roomBytes: 10 * GB },
    { image: 'b1', accountId: 'b', roomBytes: 80 * GB },
    { image: 'a2', accountId: 'a', roomBytes: 10 * GB },
  ]);
});

test("an image of unknown size never pushes out its account's images of known size, older or not", () => {
  const p = plan(100, [{ accountId: 'a', images: ['new-first', 'a1', 'a2'] }], [held('a1', 50), held('a2', 40)], {});
  assert.deepEqual(p.keep, ['a1', 'a2']);
  assert.deepEqual(p.pull, [{ image: 'new-first', accountId: 'a', roomBytes: 10 * GB }]);
  assert.deepEqual(p.remove, []);
});

test("an image learnt larger than its account's share is not pulled while the shares stay, and is when they grow", () => {
  const wanted = [
    { accountId: 'a', images: ['a1'] },
    { accountId: 'b', images: ['big'] },
  ];
  const known = { a1: 50, big: 70 };
  assert.deepEqual(images(plan(100, wanted, [], known).pull), ['a1'], 'b’s share is 50 GB');
  assert.deepEqual(
    images(plan(100, wanted, [held('big', 70)], known).remove),
    ['big'],
    'pulled before its size was known: removed',
  );
  assert.deepEqual(images(plan(100, [wanted[1]!], [], known).pull), ['big'], 'alone, it fits');
});

test('an image several accounts want is charged once, to the first account that wants it', () => {
  const p = plan(
    100,
    [
      { accountId: 'a', images: ['x'] },
      { accountId: 'b', images: ['x', 'b1'] },
    ],
    [],
    { x: 60, b1: 40 },
  );
  assert.deepEqual(p.pull, [
    { image: 'x', accountId: 'a', roomBytes: 60 * GB },
    { image: 'b1', accountId: 'b', roomBytes: 40 * GB },
  ]);
});

test('removals over several accounts come from the account most over its share first', () => {
  const h = [held('a1', 10), held('a2', 10), held('b1', 20), held('b2', 30), held('b3', 20)];
  const p = plan(
    60,
    [
      { accountId: 'a', images: ['a1', 'a2'] },
      { accountId: 'b', images: ['b1', 'b2', 'b3'] },
      { accountId: 'c', images: ['c1'] },
    ],
    h,
    { c1: 20 },
  );
  // a: 20 (all it wants); b and c: 20 each. b holds 70: its newest first, then b2.
  assert.deepEqual(images(p.remove), ['b3', 'b2']);
  assert.deepEqual(images(p.pull), ['c1']);
});

test('no budget pulls nothing and removes every image no container uses', () => {
  const p = plan(0, [{ accountId: 'a', images: ['a1'] }], [held('a1', 1)], {});
  assert.deepEqual(p.pull, []);
  assert.deepEqual(images(p.remove), ['a1']);
});

test("what a share leaves because its account's image does not fit it is lent to the others, the account using least first", () => {
  const a = { accountId: 'a', images: ['a1', 'a2', 'a3', 'a4'] };
  const p = plan(100, [a, { accountId: 'b', images: ['big'] }], [], { a1: 20, a2: 20, a3: 20, a4: 20, big: 90 });
  assert.equal(p.shares.get('a'), 80 * GB, 'a’s 50 GB share and 30 GB of b’s');
  assert.deepEqual(images(p.pull), ['a1', 'a2', 'a3', 'a4']);
  const h = [held('a1', 20), held('a2', 20), held('a3', 20), held('a4', 20)];
  const back = plan(100, [a, { accountId: 'b', images: ['b1'] }], h, { b1: 40 });
  assert.deepEqual(
    [images(back.pull), images(back.remove)],
    [['b1'], ['a4']],
    'b’s image fits its share: a4 makes room',
  );
  const poorest = plan(
    100,
    [
      { accountId: 'a', images: ['a1', 'a2'] },
      { accountId: 'b', images: ['b1'] },
    ],
    [],
    {
      a1: 30,
      a2: 40,
      b1: 70,
    },
  );
  assert.deepEqual(
    images(poorest.pull),
    ['a1', 'b1'],
    'a uses 30 of its 50, b none of its 50: b, using least, borrows',
  );
});
