// A hostile tenant's env against the process runtime: every way tenant env enters (REST and
// GraphQL pods, templates, endpoints) refuses a variable that would change what runs, and env that
// reached the store another way never reaches the process. The attacks run as real processes.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, json, type TestApp } from './support/harness.js';
import { instanceSpec } from '../src/runtime/runtime-contract.js';
import { DUMP_ENV, envFileOf as envFileIn, seenEnv as seenEnvIn } from './support/env-dump.js';

const GPU = 'NVIDIA GeForce RTX 4090';

let t: TestApp;
let a: { accountId: string; key: string };
let attackDir: string;
let evil: string;
let marker: string;

before(async () => {
  attackDir = mkdtempSync(join(tmpdir(), 'gantry-env-attack-'));
  evil = join(attackDir, 'evil.cjs');
  marker = join(attackDir, 'pwned');
  writeFileSync(evil, `require('fs').writeFileSync(${JSON.stringify(marker)}, 'ran as ' + process.pid);\n`);
  t = await createTestApp({
    file: {
      rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 },
      images: {
        'test/env-dump': { command: [process.execPath, '-e', DUMP_ENV] },
        'test/narrow': { command: [process.execPath, '-e', DUMP_ENV], tenantEnv: ['MODEL_*', 'LOG_LEVEL'] },
        'test/no-args': { command: [process.execPath, '-e', DUMP_ENV], tenantArgs: false },
      },
    },
  });
  a = await t.newAccount('env-attacker');
});
after(async () => {
  await t.close();
  rmSync(attackDir, { recursive: true, force: true });
});

const refused = (res: LightMyRequestResponse, name: string): void => {
  assert.equal(res.statusCode, 400, res.body);
  assert.match(String(res.headers['content-type']), /application\/problem\+json/);
  const body = json(res);
  assert.equal(body.code, 'ENV_NOT_ALLOWED');
  assert.ok(body.detail.includes(`"${name}"`), body.detail);
};
const createPod = (body: Record<string, unknown>) =>
  t.request(a.key, 'POST', '/v2/pods', { name: 'p', image: 'test/env-dump', gpu: { id: GPU }, ...body });
const gql = async (
  query: string,
): Promise<{ data: unknown; errors?: Array<{ message: string; extensions: { code: string } }> }> => {
  const res = await t.request(a.key, 'POST', '/graphql', { query });
  assert.equal(res.statusCode, 200, res.body);
  return json(res);
};

const envFileOf = (id: string): string => envFileIn(t.config.dataDir, id);
const seenEnv = (id: string): Promise<Record<string, string>> => seenEnvIn(t.config.dataDir, id);

describe('the API refuses tenant env that changes what a process runs', () => {
  test('a pod create naming a loader, interpreter or spawned-program variable is 400 ENV_NOT_ALLOWED naming it', async () => {
    const attacks: Record<string, string> = {
      NODE_OPTIONS: `--require=${evil}`,
      PYTHONWARNINGS: 'ignore::antigravity.x',
      BROWSER: `node ${evil}`,
      PATH: attackDir,
      LD_PRELOAD: join(attackDir, 'evil.so'),
      npm_config_script_shell: evil,
      BASH_ENV: evil,
      GANTRY_INSTANCE_ID: 'someone-else',
    };
    for (const [name, value] of Object.entries(attacks))
      refused(await createPod({ env: { MODEL: 'ok', [name]: value } }), name);
    assert.deepEqual((await t.services.pods.list(a.accountId)).length, 0);
  });

  test('driver injection, key-log files, temp folders, Jupyter config paths and proxies are refused at the API; a tenant Jupyter password is not', async () => {
    const attacks: Record<string, string> = {
      CUDA_INJECTION64_PATH: join(attackDir, 'evil.so'),
      VK_ICD_FILENAMES: join(attackDir, 'icd.json'),
      OCL_ICD_VENDORS: attackDir,
      HSA_TOOLS_LIB: join(attackDir, 'evil.so'),
      __EGL_VENDOR_LIBRARY_FILENAMES: join(attackDir, 'egl.json'),
      SSLKEYLOGFILE: join(t.config.dataDir, 'gantry.db'),
      TEMP: attackDir,
      TMP: attackDir,
      JUPYTER_CONFIG_DIR: attackDir,
      https_proxy: 'http://127.0.0.1:1',
      HF_ENDPOINT: 'http://127.0.0.1:1',
      TRITON_CACHE_DIR: attackDir,
      OMPI_MCA_mca_base_component_path: attackDir,
    };
    for (const [name, value] of Object.entries(attacks))
      refused(await createPod({ env: { MODEL: 'ok', [name]: value } }), name);
    const ok = await createPod({
      image: 'ubuntu:22.04',
      env: { JUPYTER_PASSWORD: 'mine', PUBLIC_KEY: 'ssh-ed25519 AAAA me' },
    });
    assert.equal(ok.statusCode, 201, ok.body);
  });

  test('a pod PATCH adding LD_PRELOAD is refused and leaves the pod env as it was', async () => {
    const created = await createPod({ image: 'ubuntu:22.04', env: { MODEL: 'ok' } });
    assert.equal(created.statusCode, 201, created.body);
    const { id } = json(created);
    refused(await t.request(a.key, 'PATCH', `/v2/pods/${id}`, { env: { LD_PRELOAD: '/tmp/evil.so' } }), 'LD_PRELOAD');
    assert.deepEqual((await t.services.pods.get(a.accountId, id)).env, { MODEL: 'ok' });
  });

  test('a template create or update naming PATH or BASH_ENV is refused: its env reaches every pod and worker made from it', async () => {
    refused(
      await t.request(a.key, 'POST', '/v2/templates', {
        name: 'evil-tpl',
        imageName: 'test/env-dump',
        env: { PATH: attackDir },
      }),
      'PATH',
    );
    const ok = await t.request(a.key, 'POST', '/v2/templates', {
      name: 'good-tpl',
      imageName: 'test/env-dump',
      env: { MODEL: 'ok' },
    });
    assert.equal(ok.statusCode, 201, ok.body);
    refused(await t.request(a.key, 'PATCH', `/v2/templates/${json(ok).id}`, { env: { BASH_ENV: evil } }), 'BASH_ENV');
  });

  test('GraphQL podFindAndDeployOnDemand, deployCpuPod and saveTemplate refuse the same variables', async () => {
    const gpu = await gql(
      `mutation { podFindAndDeployOnDemand(input: { name: "g", imageName: "test/env-dump", gpuTypeId: "${GPU}", gpuCount: 1, env: [{ key: "NODE_OPTIONS", value: "--require=${evil}" }] }) { id } }`,
    );
    assert.equal(gpu.errors?.[0]?.extensions.code, 'ENV_NOT_ALLOWED', JSON.stringify(gpu));
    assert.match(gpu.errors[0].message, /"NODE_OPTIONS"/);
    const cpu = await gql(
      `mutation { deployCpuPod(input: { name: "c", imageName: "test/env-dump", env: [{ key: "LD_PRELOAD", value: "/tmp/evil.so" }] }) { id } }`,
    );
    assert.equal(cpu.errors?.[0]?.extensions.code, 'ENV_NOT_ALLOWED', JSON.stringify(cpu));
    assert.match(cpu.errors[0].message, /"LD_PRELOAD"/);
    const tpl = await gql(
      `mutation { saveTemplate(input: { name: "t", imageName: "test/env-dump", containerDiskInGb: 10, volumeInGb: 0, env: [{ key: "PYTHONWARNINGS", value: "ignore::antigravity.x" }] }) { id } }`,
    );
    assert.equal(tpl.errors?.[0]?.extensions.code, 'ENV_NOT_ALLOWED', JSON.stringify(tpl));
    assert.match(tpl.errors[0].message, /"PYTHONWARNINGS"/);
  });

  test("a serverless endpoint's env naming LD_PRELOAD is refused", async () => {
    const tpl = await t.services.templates.create(a.accountId, {
      name: 'worker',
      imageName: 'test/env-dump',
      isServerless: true,
    });
    refused(
      await t.request(a.key, 'POST', '/v2/serverless', {
        name: 'ep',
        templateId: tpl.id,
        type: 'QUEUE',
        gpu: { pools: ['ADA_24'] },
        scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
        env: { LD_PRELOAD: '/tmp/evil.so' },
      }),
      'LD_PRELOAD',
    );
  });

  test("an image's tenantEnv allow-list refuses any other name, naming it", async () => {
    refused(await createPod({ image: 'test/narrow', env: { HF_TOKEN: 'x' } }), 'HF_TOKEN');
    const ok = await createPod({ image: 'test/narrow', env: { MODEL_NAME: 'small', LOG_LEVEL: 'debug' } });
    assert.equal(ok.statusCode, 201, ok.body);
    // A PATCH moving a pod onto the narrow image is checked against its allow-list too.
    const other = await createPod({ image: 'ubuntu:22.04', env: { HF_TOKEN: 'x' } });
    assert.equal(other.statusCode, 201, other.body);
    refused(await t.request(a.key, 'PATCH', `/v2/pods/${json(other).id}`, { image: 'test/narrow' }), 'HF_TOKEN');
  });
});

describe('env that reached the store or the runtime another way never reaches the process', () => {
  test('a pod whose stored env holds NODE_OPTIONS, PATH and LD_PRELOAD runs without them, and the injected code never runs', async () => {
    const created = await createPod({ env: { MODEL: 'ok' } });
    assert.equal(created.statusCode, 201, created.body);
    const { id } = json(created);
    await seenEnv(id);
    const stopped = await t.request(a.key, 'POST', `/v2/pods/${id}/action`, { action: 'stop' });
    assert.equal(stopped.statusCode, 200, stopped.body);
    // As if stored before the rule existed.
    await t.services.pods.store.update(id, {
      env: {
        MODEL: 'stored',
        NODE_OPTIONS: `--require=${evil}`,
        PATH: attackDir,
        LD_PRELOAD: join(attackDir, 'evil.so'),
      },
    });
    unlinkSync(envFileOf(id));
    const started = await t.request(a.key, 'POST', `/v2/pods/${id}/action`, { action: 'start' });
    assert.equal(started.statusCode, 200, started.body);
    const env = await seenEnv(id);
    assert.equal(env.MODEL, 'stored');
    assert.equal(env.NODE_OPTIONS, undefined);
    assert.equal(env.LD_PRELOAD, undefined);
    assert.equal(env.PATH, process.env.PATH);
    assert.equal(existsSync(marker), false, 'the NODE_OPTIONS payload ran');
  });

  test('an instance spec handed straight to the runtime has its tenant env screened the same way, and its platform env kept', async () => {
    const spec = instanceSpec({
      image: 'test/env-dump',
      env: {
        NODE_OPTIONS: `--require=${evil}`,
        PYTHONWARNINGS: 'ignore::antigravity.x',
        BROWSER: evil,
        RUNPOD_AI_API_KEY: 'forged',
        KEPT: 'yes',
      },
      platformEnv: { RUNPOD_AI_API_KEY: 'platform' },
    });
    await t.services.runtime.start(spec);
    try {
      const env = await seenEnv(spec.id);
      assert.equal(env.KEPT, 'yes');
      assert.equal(env.RUNPOD_AI_API_KEY, 'platform');
      for (const name of ['NODE_OPTIONS', 'PYTHONWARNINGS', 'BROWSER']) assert.equal(env[name], undefined, name);
      assert.equal(existsSync(marker), false, 'the NODE_OPTIONS payload ran');
    } finally {
      await t.services.runtime.stop(spec.id);
    }
  });

  test('an image mapped with tenantArgs false refuses to start an instance that sets args, saying so', async () => {
    await assert.rejects(
      t.services.runtime.start(instanceSpec({ image: 'test/no-args', args: `-e require(${JSON.stringify(evil)})` })),
      {
        message: /^cannot start image "test\/no-args": its mapping takes no args \(tenantArgs: false\)/,
      },
    );
    assert.equal(existsSync(marker), false);
  });
});
