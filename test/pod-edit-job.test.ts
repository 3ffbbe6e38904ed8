/**
 * GraphQL `podEditJob` (upstream's edit of a pod): the fields sent change through the pods
 * service's change (`PATCH /v2/pods/{id}`'s path), a running pod restarts on its host, its volume
 * and its start command kept; dstack's own document (a registry credential given to a pod, a
 * cluster's member included) works. On runtime docker over the in-memory runtime.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { dockerApp } from './support/docker-app.js';
import type { FakeRuntime } from './support/fake-runtime/fake-runtime.js';
import { json, type TestApp } from './support/harness.js';

const GPU = 'NVIDIA GeForce RTX 4090';

/** dstack 511c318c `RunpodApiClient.update_pod_container_registry_auth`, as it writes the document. */
const dstackEditRegistry = (podId: string, authId: string) => `
                mutation {
                    podEditJob(input: {
                        podId: "${podId}"
                        containerRegistryAuthId: "${authId}"
                    }) {
                        id
                    }
                }
                `;

const EDIT = `mutation edit($input: PodEditJobInput) {
  podEditJob(input: $input) { id imageName env ports containerDiskInGb volumeInGb volumeMountPath dockerArgs machineId }
}`;

describe('podEditJob', () => {
  let t: TestApp;
  let runtime: FakeRuntime;
  let alice: { accountId: string; key: string };
  let bob: { key: string };
  before(async () => {
    ({ t, runtime } = await dockerApp());
    alice = await t.newAccount('alice');
    bob = await t.newAccount('bob');
  });
  after(() => t.close());

  const gql = async (query: string, variables: Record<string, unknown> = {}, key = alice.key) =>
    json(await t.request(key, 'POST', '/graphql', { query, variables }));
  const startsOf = (id: string) => runtime.started.filter((s) => s === id).length;
  const runningPod = async (body: Record<string, unknown> = {}) => {
    const res = await t.request(alice.key, 'POST', '/v2/pods', {
      name: 'edited',
      image: 'team/app:1',
      gpu: { id: GPU },
      ports: ['22/tcp'],
      args: '{"cmd": ["exec /start.sh"], "entrypoint": ["/bin/sh", "-c"]}',
      mounts: { persistent: { size: 20, path: '/workspace' } },
      ...body,
    });
    assert.equal(res.statusCode, 201, res.body);
    const pod = json(res);
    await t.services.podController.idle(pod.id);
    return pod as { id: string; hostId: string };
  };
  /** Where the pod is placed (its record: the REST answer does not show its host). */
  const placement = async (id: string) => {
    const record = (await t.services.podController.store.get(id))!;
    return { hostId: record.hostId, gpuIndices: record.gpuIndices, portMappings: record.portMappings };
  };
  const registry = async () => {
    const res = await t.request(alice.key, 'POST', '/v2/registries', { name: 'ghcr', username: 'u', password: 'p' });
    assert.equal(res.statusCode, 201, res.body);
    return json(res).id as string;
  };

  test('dstack`s document gives a running pod a registry credential and restarts it on its host, its start command and volume kept', async () => {
    const pod = await runningPod();
    const before = json(await t.request(alice.key, 'GET', `/v2/pods/${pod.id}`));
    const placedBefore = await placement(pod.id);
    const starts = startsOf(pod.id);
    const authId = await registry();
    const answer = await gql(dstackEditRegistry(pod.id, authId));
    assert.deepEqual(answer, { data: { podEditJob: { id: pod.id } } });
    await t.services.podController.idle(pod.id);
    assert.equal(startsOf(pod.id), starts + 1, 'a new instance');
    const after = json(await t.request(alice.key, 'GET', `/v2/pods/${pod.id}`));
    assert.equal(after.registry, authId);
    assert.equal(after.status, 'RUNNING');
    assert.deepEqual(await placement(pod.id), placedBefore, 'the same host, GPUs and public ports');
    assert.deepEqual(
      [after.runtime.ports, after.mounts, after.args],
      [before.runtime.ports, before.mounts, before.args],
      'the same ports, volume and start command',
    );
    const spec = runtime.specs.get(pod.id)!;
    assert.deepEqual(spec.registryAuth, { username: 'u', password: 'p' });
    assert.deepEqual(spec.entrypoint, ['/bin/sh', '-c']);
  });

  test('image, start command, env, ports, container disk and volume path change together, with one restart, on the same host', async () => {
    const pod = await runningPod({ env: { KEEP: 'me' } });
    const starts = startsOf(pod.id);
    const answer = await gql(EDIT, {
      input: {
        podId: pod.id,
        imageName: 'team/app:2',
        dockerArgs: 'serve --port 8000',
        env: [{ key: 'MODEL', value: 'b' }],
        ports: '8000/http,22/tcp',
        containerDiskInGb: 40,
        volumeInGb: 20,
        volumeMountPath: '/data',
      },
    });
    assert.equal(answer.errors, undefined, JSON.stringify(answer.errors));
    assert.deepEqual(answer.data.podEditJob, {
      id: pod.id,
      imageName: 'team/app:2',
      env: ['MODEL=b'],
      ports: '8000/http,22/tcp',
      containerDiskInGb: 40,
      volumeInGb: 20,
      volumeMountPath: '/data',
      dockerArgs: 'serve --port 8000',
      machineId: (await placement(pod.id)).hostId,
    });
    await t.services.podController.idle(pod.id);
    assert.equal(startsOf(pod.id), starts + 1);
    const spec = runtime.specs.get(pod.id)!;
    assert.deepEqual(
      [spec.image, spec.args, spec.entrypoint, spec.env, spec.diskGb, spec.volumes],
      ['team/app:2', 'serve --port 8000', undefined, { MODEL: 'b' }, 40, [{ kind: 'persistent', path: '/data' }]],
    );
    const same = await gql(EDIT, { input: { podId: pod.id, volumeInGb: 20 } });
    assert.equal(same.errors, undefined, JSON.stringify(same.errors));
    await t.services.podController.idle(pod.id);
    assert.equal(startsOf(pod.id), starts + 1, 'an edit that changes nothing the instance sees restarts nothing');
  });

  test('a cluster`s member takes dstack`s edit (createCluster takes no credential), which the REST pod routes refuse', async () => {
    const created = await t.request(alice.key, 'POST', '/v2/clusters', {
      name: 'trainer',
      type: 'TRAINING',
      image: 'team/app:1',
      compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 },
    });
    assert.equal(created.statusCode, 201, created.body);
    const members = json(await t.request(alice.key, 'GET', `/v2/clusters/${json(created).id}/pods`)).pods as Array<{
      id: string;
    }>;
    const authId = await registry();
    const rest = await t.request(alice.key, 'PATCH', `/v2/pods/${members[0]!.id}`, { registry: authId });
    assert.equal(rest.statusCode, 409, rest.body);
    for (const member of members) {
      const answer = await gql(dstackEditRegistry(member.id, authId));
      assert.deepEqual(answer, { data: { podEditJob: { id: member.id } } });
    }
    for (const member of members) {
      await t.services.podController.idle(member.id);
      assert.deepEqual(runtime.specs.get(member.id)?.registryAuth, { username: 'u', password: 'p' });
    }
  });

  test('refusals: no podId, another account`s pod, a volume size change, a disk out of bounds, an unknown credential', async () => {
    const pod = await runningPod();
    const codeOf = async (input: Record<string, unknown>, key = alice.key) => {
      const answer = await gql(EDIT, { input }, key);
      assert.equal(answer.data?.podEditJob ?? null, null);
      return [answer.errors?.[0]?.extensions?.code, answer.errors?.[0]?.message] as [string, string];
    };
    assert.equal((await codeOf({ imageName: 'x' }))[0], 'BAD_REQUEST');
    assert.equal((await codeOf({ podId: pod.id, imageName: 'x' }, bob.key))[0], 'NOT_FOUND');
    const [mount, why] = await codeOf({ podId: pod.id, volumeInGb: 50 });
    assert.equal(mount, 'MOUNT_RULE');
    assert.match(why, /size cannot change/);
    assert.equal((await codeOf({ podId: pod.id, containerDiskInGb: 0 }))[0], 'BAD_REQUEST');
    assert.equal((await codeOf({ podId: pod.id, containerRegistryAuthId: 'nope' }))[0], 'UNKNOWN_REFERENCE');
    assert.equal(json(await t.request(alice.key, 'GET', `/v2/pods/${pod.id}`)).image, 'team/app:1', 'nothing changed');
  });
});
