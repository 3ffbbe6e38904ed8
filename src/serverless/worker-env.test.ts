import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exportLines, workerEnvironment } from './worker-env.js';
import { readWorkerEnv } from '../worker/worker-env.js';

const env = workerEnvironment({
  publicUrl: 'http://gantry.local:8080/',
  endpointId: 'ep1',
  workerId: 'local-abc',
  apiKey: 'gty_key',
  gpuType: 'NVIDIA GeForce RTX 4090',
  pingIntervalMs: 5000,
});

test('every URL a worker SDK extends with "&…" already carries a "?"', () => {
  assert.equal(env.RUNPOD_WEBHOOK_GET_JOB, 'http://gantry.local:8080/v2/ep1/job-take/$ID?gpu=NVIDIA+GeForce+RTX+4090');
  assert.equal(
    env.RUNPOD_WEBHOOK_POST_OUTPUT,
    'http://gantry.local:8080/v2/ep1/job-done/$RUNPOD_POD_ID/$ID?gpu=NVIDIA+GeForce+RTX+4090',
  );
  assert.equal(
    env.RUNPOD_WEBHOOK_POST_STREAM,
    'http://gantry.local:8080/v2/ep1/job-stream/$RUNPOD_POD_ID/$ID?gpu=NVIDIA+GeForce+RTX+4090',
  );
  assert.equal(env.RUNPOD_WEBHOOK_PING, 'http://gantry.local:8080/v2/ep1/ping/$RUNPOD_POD_ID');
});

test('the environment names the worker, its key and skips the GPU fitness checks', () => {
  assert.equal(env.RUNPOD_POD_ID, 'local-abc');
  assert.equal(env.RUNPOD_AI_API_KEY, 'gty_key');
  assert.equal(env.RUNPOD_ENDPOINT_ID, 'ep1');
  assert.equal(env.RUNPOD_PING_INTERVAL, '5000');
  assert.equal(env.RUNPOD_SKIP_AUTO_SYSTEM_CHECKS, 'true');
  assert.equal(env.RUNPOD_SKIP_GPU_CHECK, 'true');
});

test('the Node worker library fills the placeholders of the environment', () => {
  const w = readWorkerEnv(env);
  assert.equal(w.takeUrl, 'http://gantry.local:8080/v2/ep1/job-take/local-abc?gpu=NVIDIA+GeForce+RTX+4090');
  assert.equal(
    w.doneUrl('job1'),
    'http://gantry.local:8080/v2/ep1/job-done/local-abc/job1?gpu=NVIDIA+GeForce+RTX+4090',
  );
  assert.equal(w.stopUrl, 'http://gantry.local:8080/v2/ep1/job-stop/local-abc?gpu=NVIDIA+GeForce+RTX+4090');
  assert.equal(w.pingUrl, 'http://gantry.local:8080/v2/ep1/ping/local-abc');
});

test('export lines single-quote values so the shell leaves $ID alone', () => {
  assert.equal(exportLines({ A: 'x/$ID?y', B: "it's" }), `export A='x/$ID?y'\nexport B='it'\\''s'`);
});
