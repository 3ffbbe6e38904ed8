// An image whose mapping narrows tenant env (`tenantEnv`) against the process runtime: the
// spawn-time screen applies to the tenant's env only, so the variables the platform itself sets
// (the Jupyter password startJupyter generates, the keys startSsh injects, a launched worker's
// protocol variables, key and SDK flags) always reach the process, and a refused tenant variable
// that reached the store never does. The instances run as real processes.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { unlinkSync } from 'node:fs';
import { FakeClock } from '../src/domain/clock.js';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';
import { DUMP_ENV, envFileOf as envFileIn, seenEnv as seenEnvIn } from './support/env-dump.js';

const GPU = 'NVIDIA GeForce RTX 4090';
const blob = Buffer.concat([
  Buffer.from([0, 0, 0, 11]),
  Buffer.from('ssh-ed25519'),
  Buffer.from([0, 0, 0, 32]),
  Buffer.alloc(32, 7),
]).toString('base64');
const SSH_KEY = `ssh-ed25519 ${blob} me@laptop`;

for (const { name, skip } of dialects()) {
  describe(`platform env beside a narrowed tenant env (${name})`, { skip }, () => {
    let t: TestApp;
    let clock: FakeClock;
    let a: { accountId: string; key: string };

    before(async () => {
      clock = new FakeClock(Date.now());
      t = await createTestApp({
        dialect: name,
        clock,
        file: {
          rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 },
          images: { 'test/narrow': { command: [process.execPath, '-e', DUMP_ENV], tenantEnv: ['MODEL_*'] } },
        },
      });
      await t.services.autoscaler.start({ loop: false });
      a = await t.newAccount('narrow-tenant');
      await t.services.accounts.putSshKeys(a.accountId, [SSH_KEY]);
    });
    after(async () => {
      await t?.services.autoscaler.stop();
      await t?.close();
    });

    const envFileOf = (id: string): string => envFileIn(t.config.dataDir, id);
    const seenEnv = (id: string): Promise<Record<string, string>> => seenEnvIn(t.config.dataDir, id);
    const createPod = async (body: Record<string, unknown>): Promise<string> => {
      const res = await t.request(a.key, 'POST', '/v2/pods', {
        name: 'p',
        image: 'test/narrow',
        gpu: { id: GPU },
        ...body,
      });
      assert.equal(res.statusCode, 201, res.body);
      return json(res).id as string;
    };

    test('a startJupyter pod sees the password the platform generated, and a refused variable stored for it is still dropped', async () => {
      const id = await createPod({ startJupyter: true, env: { MODEL_NAME: 'small' } });
      const generated = (await t.services.pods.store.get(id))!.hiddenEnv.JUPYTER_PASSWORD;
      assert.ok(generated, 'startJupyter generated a password');
      let env = await seenEnv(id);
      assert.equal(env.JUPYTER_PASSWORD, generated, 'Jupyter would run without a password');
      assert.equal(env.MODEL_NAME, 'small');

      assert.equal((await t.request(a.key, 'POST', `/v2/pods/${id}/action`, { action: 'stop' })).statusCode, 200);
      // As if stored before the rule existed, or by a path the API does not check.
      await t.services.pods.store.update(id, {
        env: {
          MODEL_NAME: 'stored',
          LD_PRELOAD: '/tmp/evil.so',
          JUPYTER_PASSWORD: 'forged',
          RUNPOD_AI_API_KEY: 'forged',
        },
      });
      unlinkSync(envFileOf(id));
      assert.equal((await t.request(a.key, 'POST', `/v2/pods/${id}/action`, { action: 'start' })).statusCode, 200);
      env = await seenEnv(id);
      assert.equal(env.MODEL_NAME, 'stored');
      assert.equal(env.LD_PRELOAD, undefined);
      assert.equal(env.RUNPOD_AI_API_KEY, undefined);
      assert.equal(env.JUPYTER_PASSWORD, generated, "the platform's password wins over a stored tenant value");
    });

    test('a startSsh pod sees the PUBLIC_KEY the platform injected from its account keys', async () => {
      const id = await createPod({ startSsh: true, env: { MODEL_NAME: 'small' } });
      const env = await seenEnv(id);
      assert.equal(env.PUBLIC_KEY, SSH_KEY);
      assert.equal(env.RUNPOD_POD_ID, id);
    });

    test('a launched worker sees its worker-protocol variables, its key and the SDK flags, and its tenant env only as narrowed', async () => {
      const template = await t.services.templates.create(a.accountId, {
        name: 'worker',
        imageName: 'test/narrow',
        isServerless: true,
        env: { MODEL_NAME: 'small' },
      });
      const ep = await t.services.endpoints.create(a.accountId, {
        name: 'ep',
        templateId: template.id,
        gpuIds: 'ADA_24',
        workersMin: 0,
        workersMax: 1,
      });
      const submitted = await t.request(a.key, 'POST', `/v2/${ep.id}/run`, { input: {} });
      assert.equal(submitted.statusCode, 200, submitted.body);
      await t.services.autoscaler.tick(clock.now());
      const [workerId] = t.services.autoscaler.workerIds(ep.id);
      assert.ok(workerId, 'the autoscaler launched a worker');
      const env = await seenEnv(workerId);
      assert.equal(env.MODEL_NAME, 'small');
      assert.equal(env.RUNPOD_POD_ID, workerId);
      assert.equal(env.RUNPOD_ENDPOINT_ID, ep.id);
      assert.ok(env.RUNPOD_AI_API_KEY, 'the worker has no key');
      assert.equal((await t.services.accounts.authenticate(env.RUNPOD_AI_API_KEY))?.accountId, a.accountId);
      for (const name of [
        'RUNPOD_WEBHOOK_GET_JOB',
        'RUNPOD_WEBHOOK_POST_OUTPUT',
        'RUNPOD_WEBHOOK_POST_STREAM',
        'RUNPOD_WEBHOOK_PING',
        'RUNPOD_PING_INTERVAL',
        'RUNPOD_POD_HOSTNAME',
      ])
        assert.ok(env[name], `${name} is missing`);
      assert.equal(env.RUNPOD_SKIP_GPU_CHECK, 'true');
      assert.equal(env.RUNPOD_SKIP_AUTO_SYSTEM_CHECKS, 'true');
    });
  });
}
