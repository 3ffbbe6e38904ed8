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
