import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readWorkerEnv } from './worker-env.js';

const base = 'http://127.0.0.1:8080/v2/ep';
const env = {
  RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/$RUNPOD_POD_ID?gpu=x`,
  RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/$RUNPOD_POD_ID/$ID?gpu=x`,
  RUNPOD_WEBHOOK_PING: `${base}/ping/$RUNPOD_POD_ID?gpu=x`,
  RUNPOD_AI_API_KEY: 'k',
};

test('the worker id fills every URL template: the take, result, stream, stop and ping URLs', () => {
  const w = readWorkerEnv({ ...env, RUNPOD_POD_ID: 'w7' });
  assert.equal(w.workerId, 'w7');
  assert.equal(w.takeUrl, `${base}/job-take/w7?gpu=x`);
  assert.equal(w.doneUrl('j1'), `${base}/job-done/w7/j1?gpu=x`);
  assert.equal(w.streamUrl('j1'), `${base}/job-stream/w7/j1?gpu=x`);
  assert.equal(w.stopUrl, `${base}/job-stop/w7?gpu=x`);
  assert.equal(w.pingUrl, `${base}/ping/w7?gpu=x`);
});

test('workers started without RUNPOD_POD_ID each get their own id, never a shared default', () => {
  const a = readWorkerEnv(env);
  const b = readWorkerEnv({ ...env, RUNPOD_POD_ID: '' });
  assert.match(a.workerId, /^local-[0-9a-f-]{8,}$/);
  assert.notEqual(a.workerId, b.workerId);
  assert.ok(a.takeUrl.includes(`/job-take/${a.workerId}?`));
});
