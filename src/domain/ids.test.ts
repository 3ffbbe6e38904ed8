import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isWellFormedId, newId, newJobId, newSortableId } from './ids.js';

test('ids are lowercase alphanumeric of the asked length, and accepted on paths', () => {
  for (const length of [6, 14, 25, 80]) {
    const id = newId(length);
    assert.match(id, new RegExp(`^[a-z0-9]{${length}}$`));
  }
  assert.ok(isWellFormedId(newJobId()) && isWellFormedId(newSortableId()));
});

test('job ids sort by submission time and carry 25 random characters', () => {
  const earlier = newJobId(1_767_225_600_000);
  const later = newJobId(1_767_225_600_001);
  assert.ok(earlier < later);
  assert.match(later, /^[a-z0-9]{8}-[a-z0-9]{25}$/);
});

test('sortable ids are 14 characters, sort by time, and never repeat within one millisecond', () => {
  const now = 1_767_225_600_000;
  const same = new Set(Array.from({ length: 20_000 }, () => newSortableId(now)));
  assert.equal(same.size, 20_000);
  for (const id of same) assert.match(id, /^[a-z0-9]{14}$/);
  assert.ok(newSortableId(now) < newSortableId(now + 1));
});
