import { test } from 'node:test';
import assert from 'node:assert/strict';
import { keptIdleMs } from './pod-connections.js';

test('an idle connection is kept less long than its server said it keeps it, so the server never closes it first; 4 s when unsaid', () => {
  assert.equal(keptIdleMs(null), 4_000);
  // Node's and uvicorn's default: the proxy's own 4 s is already under it
  assert.equal(keptIdleMs(5_000), 4_000);
  assert.equal(keptIdleMs(2_000), 1_000);
  assert.equal(keptIdleMs(1_000), 500);
  assert.equal(keptIdleMs(0), 0, 'a server keeping nothing idle: not kept');
  assert.equal(keptIdleMs(75_000), 4_000);
});
