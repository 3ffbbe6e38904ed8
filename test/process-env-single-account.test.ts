/**
 * On a process runtime that serves one account (the default: `runtime.process.allowMultipleAccounts`
 * false), the tenant's env is refused only where it changes which code runs; application settings
 * pass and reach the process. The public OpenAPI example of `POST /v2/templates` (runpod/docs
 * a900806e, `api-reference-v2/openapi.json`, example `podTemplate`: env `JUPYTER_ENABLE_LAB`) is the
 * request. A server serving several accounts keeps refusing settings too.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, json, type TestApp } from './support/harness.js';
import { DUMP_ENV, seenEnv } from './support/env-dump.js';

const GPU = 'NVIDIA GeForce RTX 4090';

const podTemplate = {
  name: 'PyTorch GPU Template',
  image: 'runpod/pytorch:1.0.2-cu1281-torch280-ubuntu2404',
  category: 'NVIDIA',
  disk: 50,
  ports: ['8888/http'],
  env: { JUPYTER_ENABLE_LAB: 'yes' },
  mounts: { persistent: { size: 20, path: '/workspace' } },
  serverless: false,
  public: false,
};

const file = { images: { 'test/env-dump': { command: [process.execPath, '-e', DUMP_ENV] } } };
let single: TestApp;
let shared: TestApp;
before(async () => {
  single = await createTestApp({ file, env: { GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT: 'false' } });
  shared = await createTestApp({ file, env: { GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT: 'true' } });
});
after(async () => {
  await single.close();
  await shared.close();
});

test('the public example template (env JUPYTER_ENABLE_LAB) is created on a single-account process runtime, and a pod from it gets the setting', async () => {
  const { key } = await single.newAccount();
  const res = await single.request(key, 'POST', '/v2/templates', podTemplate);
  assert.equal(res.statusCode, 201, res.body);
  assert.deepEqual(json(res).env, { JUPYTER_ENABLE_LAB: 'yes' });

  const settings = { JUPYTER_ENABLE_LAB: 'yes', TMPDIR: '/tmp/mine', HTTPS_PROXY: 'http://proxy.internal:3128' };
  const pod = await single.request(key, 'POST', '/v2/pods', {
    name: 'lab',
    image: 'test/env-dump',
    gpu: { id: GPU },
    env: settings,
  });
  assert.equal(pod.statusCode, 201, pod.body);
  const seen = await seenEnv(single.config.dataDir, json(pod).id);
  for (const [name, value] of Object.entries(settings)) assert.equal(seen[name], value, name);
});

test('a single-account process runtime still refuses what changes which code runs', async () => {
  const { key } = await single.newAccount();
  for (const [name, value] of [
    ['LD_PRELOAD', '/tmp/evil.so'],
    ['NODE_OPTIONS', '--require=/tmp/evil.cjs'],
    ['PYTHONSTARTUP', '/tmp/evil.py'],
    ['JUPYTER_CONFIG_DIR', '/tmp/evil'],
    ['PATH', '/tmp/evil'],
  ] as const) {
    const res = await single.request(key, 'POST', '/v2/templates', { ...podTemplate, env: { [name]: value } });
    assert.equal(res.statusCode, 400, `${name}: ${res.body}`);
    assert.equal(json(res).code, 'ENV_NOT_ALLOWED');
    assert.ok(json(res).detail.includes(`"${name}"`), json(res).detail);
  }
});

test('a process runtime serving several accounts refuses application settings too', async () => {
  const { key } = await shared.newAccount();
  const res = await shared.request(key, 'POST', '/v2/templates', podTemplate);
  assert.equal(res.statusCode, 400, res.body);
  assert.equal(json(res).code, 'ENV_NOT_ALLOWED');
  assert.match(json(res).detail, /"JUPYTER_ENABLE_LAB"/);
});
