import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseWorkerPost } from './worker-post.js';

test('a worker post with both error and output fails the job: error wins', () => {
  assert.equal(parseWorkerPost('j', 'w', { output: 1, error: 'boom' }).result.status, 'FAILED');
  assert.equal(parseWorkerPost('j', 'w', { status: 'IN_PROGRESS', output: 1 }).result.status, 'IN_PROGRESS');
  assert.deepEqual(parseWorkerPost('j', 'w', { output: [], stopPod: true }), {
    result: { id: 'j', workerId: 'w', status: 'COMPLETED', outputJson: '[]', error: null },
    stopPod: true,
  });
  assert.equal(parseWorkerPost('j', 'w', { error: { type: 'ValueError' } }).result.error, '{"type":"ValueError"}');
});

test("a NUL in a worker's error message is kept as U+FFFD, so the failure can be stored on PostgreSQL", () => {
  assert.equal(parseWorkerPost('j', 'w', { error: 'bad\u0000byte' }).result.error, 'bad\uFFFDbyte');
  // inside JSON text a NUL stays the escape `\u0000`: nothing to replace
  assert.equal(parseWorkerPost('j', 'w', { error: { m: '\u0000' } }).result.error, '{"m":"\\u0000"}');
});
