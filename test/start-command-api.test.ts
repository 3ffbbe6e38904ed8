/**
 * The start command over every transport (docs/api.md "The start command"): what dstack sends in
 * GraphQL `dockerArgs` and SkyPilot in REST v1 `dockerEntrypoint` + `dockerStartCmd` reach the
 * instance as its entrypoint and command, read back the same way over v1, v2 and GraphQL, and stay
 * through every change and restart; runtime process refuses an entrypoint, naming itself. On
 * runtime docker over the in-memory runtime (test/support/docker-app.ts); the containers
 * themselves: test/orchestrator-ssh.e2e.test.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { splitArgs } from '../src/runtime/split-args.js';
import { dockerApp } from './support/docker-app.js';
import type { FakeRuntime } from './support/fake-runtime/fake-runtime.js';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, json, type TestApp } from './support/harness.js';

const GPU = 'NVIDIA GeForce RTX 4090';

/** What dstack's `_get_docker_args` writes (test/fixtures/dstack-docker-args.py runs its code). */
const DSTACK = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', 'dstack-docker-args.json'), 'utf8')) as {
  graphqlLiteralBody: string;
};
/** The text the GraphQL parser reads out of dstack's literal. */
const DSTACK_ARGS = JSON.parse(`"${DSTACK.graphqlLiteralBody}"`) as string;
const DSTACK_COMMAND = (JSON.parse(DSTACK_ARGS) as { cmd: string[] }).cmd[0]!;

/**
 * dstack's `_generate_pod_deployment_mutation` (511c318c, compute.py run_job) with its dockerArgs as
 * it writes it; its `minCudaVersion: "12.8"` is left out (the host here reports CUDA 12.4).
 */
const dstackCreatePod = (name: string) => `
        mutation {
          podFindAndDeployOnDemand(
            input: {
              name: "${name}", imageName: "dstackai/base:py3.12-0.10-cuda-12.1", gpuTypeId: "${GPU}", cloudType: SECURE, startSsh: true, supportPublicIp: true, gpuCount: 1, containerDiskInGb: 20, minVcpuCount: 8, minMemoryInGb: 31, dockerArgs: "${DSTACK.graphqlLiteralBody}", ports: "10022/tcp", env: [{ key: "RUNPOD_POD_USER", value: "0" }]
            }
          ) {
            id
            lastStatusChange
            imageName
            machine {
              podHostId
            }
          }
        }
        `;

/** SkyPilot's `_rest_pod_create_params` body (sky/provision/runpod/utils.py, REST v1 generation). */
const skypilotBody = (name: string, bootstrap: string) => ({
  name,
  imageName: 'runpod/base:0.0.2',
  containerDiskInGb: 20,
  ports: ['22/tcp'],
  supportPublicIp: true,
  computeType: 'GPU',
  cloudType: 'SECURE',
  gpuTypeIds: [GPU],
  gpuCount: 1,
  minVCPUPerGPU: 4,
  minRAMPerGPU: 24,
  dockerEntrypoint: ['bash', '-c'],
  dockerStartCmd: [bootstrap],
});
const BOOTSTRAP = 'echo cHJlZml4X2NtZCgpIHsgOjsgfQ== | base64 --decode > init.sh; bash init.sh';

const GQL_POD = 'query pod($id: String) { pod(input: { podId: $id }) { id dockerArgs } }';

describe('the start command on runtime docker', () => {
  let t: TestApp;
  let runtime: FakeRuntime;
  let key: string;
  before(async () => {
    ({ t, runtime } = await dockerApp());
    key = (await t.newAccount('orchestrator')).key;
  });
  after(() => t.close());

  const gql = async (query: string, variables: Record<string, unknown> = {}) => {
    const body = json(await t.request(key, 'POST', '/graphql', { query, variables }));
    assert.equal(body.errors, undefined, JSON.stringify(body.errors));
    return body.data;
  };
  /** What the pod's instance was last started with, once the controller is done with it. */
  const specOf = async (id: string) => {
    await t.services.podController.idle(id);
    const spec = runtime.specs.get(id);
    assert.ok(spec, `pod ${id} has no running instance`);
    return spec;
  };
  /** How each transport reads the pod's start command back. */
  const readBack = async (id: string) => ({
    v2: json(await t.request(key, 'GET', `/v2/pods/${id}`)).args as string,
    v1: json<{ dockerEntrypoint: string[]; dockerStartCmd: string[] }>(await t.request(key, 'GET', `/v1/pods/${id}`)),
    graphql: (await gql(GQL_POD, { id })).pod.dockerArgs as string,
  });

  test('dstack`s dockerArgs, exactly as it writes it into a GraphQL literal, starts /bin/sh -c with its command, and reads back as sent', async () => {
    const pod = (await gql(dstackCreatePod('dstack-run-0-0'))).podFindAndDeployOnDemand;
    const spec = await specOf(pod.id);
    assert.deepEqual(spec.entrypoint, ['/bin/sh', '-c']);
    assert.deepEqual(splitArgs(spec.args), [DSTACK_COMMAND]);
    const back = await readBack(pod.id);
    assert.equal(back.v2, DSTACK_ARGS, 'REST v2 args: the text as sent');
    assert.equal(back.graphql, DSTACK_ARGS, 'GraphQL dockerArgs: the text as sent');
    assert.deepEqual(back.v1.dockerEntrypoint, ['/bin/sh', '-c']);
    assert.deepEqual(back.v1.dockerStartCmd, [DSTACK_COMMAND]);
  });

  test('SkyPilot`s REST v1 launch (dockerEntrypoint bash -c, its bootstrap as dockerStartCmd) starts bash -c with the bootstrap as one word', async () => {
    const res = await t.request(key, 'POST', '/v1/pods', skypilotBody('sky-head', BOOTSTRAP));
    assert.equal(res.statusCode, 201, res.body);
    const pod = json(res);
    assert.deepEqual([pod.dockerEntrypoint, pod.dockerStartCmd], [['bash', '-c'], [BOOTSTRAP]]);
    const spec = await specOf(pod.id);
    assert.deepEqual([spec.entrypoint, splitArgs(spec.args)], [['bash', '-c'], [BOOTSTRAP]]);
    const back = await readBack(pod.id);
    assert.equal(back.v2, `{"cmd": ["${BOOTSTRAP}"], "entrypoint": ["bash", "-c"]}`, 'stored as dstack writes it');
    assert.equal(back.graphql, back.v2);
  });

  test('a change that restarts the pod, a restart, a stop and start, and a v1 change of the command alone all keep the entrypoint', async () => {
    const created = json(
      await t.request(key, 'POST', '/v2/pods', {
        name: 'kept',
        image: 'team/app:1',
        gpu: { id: GPU },
        args: '{"entrypoint": ["/bin/sh", "-c"], "cmd": ["exec sleep 600"]}',
      }),
    );
    const startsBefore = () => runtime.started.filter((id) => id === created.id).length;
    await specOf(created.id);
    const expectKept = async (what: string, command = ['exec sleep 600']) => {
      const spec = await specOf(created.id);
      assert.deepEqual([spec.entrypoint, splitArgs(spec.args)], [['/bin/sh', '-c'], command], what);
    };
    const starts = startsBefore();
    const patched = await t.request(key, 'PATCH', `/v2/pods/${created.id}`, { env: { MODEL: 'b' } });
    assert.equal(patched.statusCode, 200, patched.body);
    await expectKept('PATCH of env');
    assert.equal(startsBefore(), starts + 1, 'the env change restarted the instance');
    await t.request(key, 'POST', `/v2/pods/${created.id}/action`, { action: 'restart' });
    await expectKept('restart');
    await t.request(key, 'POST', `/v1/pods/${created.id}/stop`);
    await t.services.podController.idle(created.id);
    await t.request(key, 'POST', `/v1/pods/${created.id}/start`);
    await expectKept('stop and start');
    const v1 = await t.request(key, 'PATCH', `/v1/pods/${created.id}`, { dockerStartCmd: ['exec sleep 5'] });
    assert.deepEqual(json(v1).dockerEntrypoint, ['/bin/sh', '-c'], v1.body);
    await expectKept('v1 dockerStartCmd alone', ['exec sleep 5']);
    const cleared = await t.request(key, 'PATCH', `/v1/pods/${created.id}`, { dockerEntrypoint: [] });
    assert.deepEqual([json(cleared).dockerEntrypoint, json(cleared).dockerStartCmd], [[], ['exec sleep 5']]);
    assert.equal(json(await t.request(key, 'GET', `/v2/pods/${created.id}`)).args, "'exec sleep 5'");
    assert.equal((await specOf(created.id)).entrypoint, undefined, 'dockerEntrypoint [] gives the image its own back');
  });

  test('a v1 template`s entrypoint reaches the pods made from it, and reads back from the template', async () => {
    const template = json(
      await t.request(key, 'POST', '/v1/templates', {
        name: 'sky-template',
        imageName: 'team/app:1',
        dockerEntrypoint: ['bash', '-c'],
        dockerStartCmd: ['echo ready; sleep infinity'],
      }),
    );
    assert.deepEqual(
      [template.dockerEntrypoint, template.dockerStartCmd],
      [['bash', '-c'], ['echo ready; sleep infinity']],
    );
    const pod = json(
      await t.request(key, 'POST', '/v2/pods', { name: 'from-template', templateId: template.id, gpu: { id: GPU } }),
    );
    const spec = await specOf(pod.id);
    assert.deepEqual([spec.entrypoint, splitArgs(spec.args)], [['bash', '-c'], ['echo ready; sleep infinity']]);
    const changed = await t.request(key, 'PATCH', `/v1/templates/${template.id}`, { dockerStartCmd: ['true'] });
    assert.deepEqual([json(changed).dockerEntrypoint, json(changed).dockerStartCmd], [['bash', '-c'], ['true']]);
  });

  test('what is not the override is shell words with the image`s entrypoint, and v1 reads it as words', async () => {
    for (const args of ['{"cmd": "serve"}', '{"cmd": ["a"], "env": ["X=1"]}', '["bash", "-c"]', 'serve --port 8000']) {
      const res = await t.request(key, 'POST', '/v2/pods', {
        name: 'words',
        image: 'team/app:1',
        gpu: { id: GPU },
        args,
      });
      assert.equal(res.statusCode, 201, res.body);
      const pod = json(res);
      const spec = await specOf(pod.id);
      assert.equal(spec.entrypoint, undefined, args);
      assert.equal(spec.args, args, args);
      const v1 = json(await t.request(key, 'GET', `/v1/pods/${pod.id}`));
      assert.deepEqual([v1.dockerEntrypoint, v1.dockerStartCmd], [[], splitArgs(args)], args);
      await t.request(key, 'DELETE', `/v2/pods/${pod.id}`);
    }
  });

  test('a start command past its bounds is refused over each transport, before anything is placed', async () => {
    const long = { name: 'long', image: 'team/app:1', gpu: { id: GPU }, args: 'x'.repeat(16_385) };
    assert.equal((await t.request(key, 'POST', '/v2/pods', long)).statusCode, 422, 'REST v2: the schema bounds it');
    const huge = `{"cmd": ["${'y'.repeat(16_400)}"]}`.replace(/"/g, '\\"');
    const answer = json(
      await t.request(key, 'POST', '/graphql', {
        query: `mutation { podFindAndDeployOnDemand(input: { name: "x", imageName: "a", gpuTypeId: "${GPU}", dockerArgs: "${huge}" }) { id } }`,
      }),
    );
    assert.equal(answer.errors?.[0]?.extensions?.code, 'BAD_REQUEST', JSON.stringify(answer));
    assert.match(answer.errors[0].message, /at most 16384/);
    const nul = await t.request(key, 'POST', '/v1/pods', { ...skypilotBody('nul', 'a\u0000b') });
    assert.equal(nul.statusCode, 400, nul.body);
    assert.match(json(nul).detail, /NUL/);
    const both = await t.request(key, 'POST', '/v1/pods', { ...skypilotBody('both', 'x'), dockerArgs: 'y' });
    assert.equal(both.statusCode, 400, both.body);
    assert.match(json(both).detail, /not both/);
    const pods = json(await t.request(key, 'GET', '/v2/pods')).pods as Array<{ name: string }>;
    assert.ok(!pods.some((p) => ['x', 'nul', 'both'].includes(p.name)), 'no refused pod was stored');
  });
});

describe('the start command on runtime process', () => {
  let t: TestApp;
  let key: string;
  before(async () => {
    t = await createTestApp();
    key = (await t.newAccount('trusted')).key;
  });
  after(() => t.close());

  test('an entrypoint over REST v1, REST v2, GraphQL, a PATCH or a template is refused with 400 naming the runtime; a command alone is taken', async () => {
    const refused = (res: LightMyRequestResponse, what: string) => {
      assert.equal(res.statusCode, 400, `${what}: ${res.body}`);
      assert.equal(json(res).code, 'ENTRYPOINT_NOT_SUPPORTED', what);
      assert.match(json(res).detail, /runtime process cannot/, what);
    };
    refused(await t.request(key, 'POST', '/v1/pods', skypilotBody('sky', BOOTSTRAP)), 'REST v1 dockerEntrypoint');
    const v2 = { name: 'p', image: 'team/app:1', gpu: { id: GPU } };
    refused(await t.request(key, 'POST', '/v2/pods', { ...v2, args: DSTACK_ARGS }), 'REST v2 args');
    const answer = json(await t.request(key, 'POST', '/graphql', { query: dstackCreatePod('dstack') }));
    assert.equal(answer.errors?.[0]?.extensions?.code, 'ENTRYPOINT_NOT_SUPPORTED', JSON.stringify(answer));
    assert.match(answer.errors[0].message, /runtime process/);
    refused(
      await t.request(key, 'POST', '/v1/templates', { name: 'tpl', imageName: 'a', dockerEntrypoint: ['bash'] }),
      'REST v1 template',
    );
    const plain = await t.request(key, 'POST', '/v2/pods', { ...v2, args: '{"cmd": ["serve", "two words"]}' });
    assert.equal(plain.statusCode, 201, plain.body);
    refused(
      await t.request(key, 'PATCH', `/v2/pods/${json(plain).id}`, { args: '{"entrypoint": ["sh"]}' }),
      'PATCH args',
    );
    assert.equal(
      json(await t.request(key, 'GET', `/v2/pods/${json(plain).id}`)).args,
      '{"cmd": ["serve", "two words"]}',
    );
  });
});
