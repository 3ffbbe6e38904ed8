/**
 * One account's objects of every kind a data dir keeps — keys (one revoked), a registry
 * credential, templates, stopped pods, a network volume, an endpoint with a completed and a queued
 * job, a joined fleet host — made through the public API and CLI of a running server
 * (`populateWorld`, also run against v0.1.0 by scripts/make-upgrade-fixture.ts), and the checks that
 * they all survived on another server (`checkWorld`: after a restore, after an upgrade). Only the
 * REST API of v0.1.0 is used to make them, so the same code makes the upgrade fixture.
 */
import assert from 'node:assert/strict';
import { eventually } from './eventually.js';

/** What `populateWorld` made, with the secrets a check needs (test values, made for the fixture). */
export interface World {
  /** When the world was made (epoch ms): the upgrade test moves the fixture's times from it to now. */
  madeAt: number;
  adminKey: string;
  aliceKey: string;
  revokedKey: string;
  registry: { id: string; name: string; username: string; password: string };
  podTemplateId: string;
  serverlessTemplateId: string;
  pods: Array<{ id: string; name: string; imageName: string; gpuCount: number; env: Record<string, string> }>;
  volume: { id: string; name: string; size: number };
  endpoint: { id: string; name: string };
  jobs: { completed: { id: string; output: unknown }; queued: { id: string; input: unknown } };
  host: { id: string; name: string; credential: string };
}

/** The image pods run: a process that waits (the process runtime's `images` map in `worldConfig`). */
const WORLD_IMAGE = 'gantry-fixture/sleeper:1';
/** The GPU type the fixture's pods run on (the process runtime's demo fleet has it). */
const WORLD_GPU = 'NVIDIA GeForce RTX 4090';

/** The config file's content that both the old and the new server run the world's pods with. */
export const worldConfig = (): string =>
  JSON.stringify({
    images: { [WORLD_IMAGE]: { command: [process.execPath, '-e', 'setInterval(() => {}, 1 << 30)'] } },
  });

/** A command-line runner of the server's machine (`gantry …` on the server's store). */
export type GantryCli = (args: string[]) => { status: number | null; stdout: string; stderr: string };

export async function api(
  base: string,
  key: string | null,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: the text
  }
  return { status: res.status, body: parsed };
}

async function ok(call: Promise<{ status: number; body: any }>, what: string): Promise<any> {
  const r = await call;
  assert.ok(r.status >= 200 && r.status < 300, `${what}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

const cliOk = (gantry: GantryCli, args: string[]): string => {
  const r = gantry(args);
  assert.equal(r.status, 0, `gantry ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
};

/** Makes the world on the server at `url` (started with `adminKey` as its bootstrap key). */
export async function populateWorld(url: string, adminKey: string, gantry: GantryCli): Promise<World> {
  const madeAt = Date.now();
  cliOk(gantry, ['accounts', 'create', 'alice']);
  const aliceKey = cliOk(gantry, ['keys', 'create', '--account', 'alice', '--scope', 'write', '--name', 'fixture']);
  const revokedKey = cliOk(gantry, ['keys', 'create', '--account', 'alice', '--scope', 'read', '--name', 'revoked']);
  const revokedId = cliOk(gantry, ['keys', 'list', '--account', 'alice'])
    .split('\n')
    .map((line) => line.split('\t'))
    .find((cols) => cols.at(-1) === 'revoked')?.[0];
  cliOk(gantry, ['keys', 'revoke', revokedId!]);
  const call = (method: string, path: string, body?: unknown) =>
    ok(api(url, aliceKey, method, path, body), `${method} ${path}`);

  const registry = { name: 'fixture-registry', username: 'fixture-user', password: 'fixture-registry-password-0123' };
  const { id: registryId } = await call('POST', '/v1/containerregistryauth', registry);
  const podTemplate = await call('POST', '/v1/templates', {
    name: 'fixture-pod-template',
    imageName: WORLD_IMAGE,
    containerRegistryAuthId: registryId,
    env: { FROM_TEMPLATE: 'yes' },
  });
  const serverlessTemplate = await call('POST', '/v1/templates', {
    name: 'fixture-worker-template',
    imageName: WORLD_IMAGE,
    isServerless: true,
  });
  const volume = await call('POST', '/v1/networkvolumes', {
    name: 'fixture-volume',
    size: 10,
    dataCenterId: 'EU-RO-1',
  });

  const pods: World['pods'] = [];
  for (const [name, gpuCount] of [
    ['fixture-pod-a', 1],
    ['fixture-pod-b', 2],
  ] as const) {
    const env = { FIXTURE_POD: name };
    const pod = await call('POST', '/v1/pods', {
      name,
      imageName: WORLD_IMAGE,
      gpuTypeIds: [WORLD_GPU],
      gpuCount,
      env,
      ports: ['8888/http', '22/tcp'],
      containerRegistryAuthId: registryId,
    });
    await eventually(
      `pod ${name} running`,
      async () => (await call('GET', `/v1/pods/${pod.id}`)).desiredStatus === 'RUNNING',
    );
    await call('POST', `/v1/pods/${pod.id}/stop`);
    await eventually(
      `pod ${name} stopped`,
      async () => (await call('GET', `/v1/pods/${pod.id}`)).desiredStatus === 'EXITED',
    );
    pods.push({ id: pod.id, name, imageName: WORLD_IMAGE, gpuCount, env });
  }

  // no workers (max 0): the jobs stay as the fixture left them
  const endpoint = await call('POST', '/v1/endpoints', {
    name: 'fixture-endpoint',
    templateId: serverlessTemplate.id,
    gpuTypeIds: [WORLD_GPU],
    workersMin: 0,
    workersMax: 0,
  });
  const done = await call('POST', `/v2/${endpoint.id}/run`, { input: { n: 1 } });
  const taken = await call('GET', `/v2/${endpoint.id}/job-take/fixture-worker`);
  assert.equal(taken.id, done.id, 'the first job is taken');
  const output = { doubled: 2 };
  await call('POST', `/v2/${endpoint.id}/job-done/fixture-worker/${done.id}`, { output });
  await eventually(
    'the first job completed',
    async () => (await call('GET', `/v2/${endpoint.id}/status/${done.id}`)).status === 'COMPLETED',
  );
  const queuedInput = { n: 21 };
  const queued = await call('POST', `/v2/${endpoint.id}/run`, { input: queuedInput });

  const token = cliOk(gantry, ['hosts', 'token', 'create', '--data-center', 'EU-RO-1', '--ttl', '10m']);
  const joined = await ok(
    api(url, null, 'POST', '/agent/v1/join', {
      token,
      name: 'fixture-host',
      publicIp: '127.0.0.1',
      portRange: [41000, 41999],
      agentVersion: '0.1.0',
      capacity: {
        vcpus: 16,
        memoryGb: 64,
        diskGb: 500,
        gpus: [{ uuid: 'GPU-f1c7a4e0-0000-aaaa-bbbb-cccc', name: 'NVIDIA RTX A6000', memoryMb: 49140 }],
        cudaVersion: '12.4',
        gpuMode: 'nvidia',
        cpuFlavors: [],
        notes: [],
      },
    }),
    'join',
  );
  return {
    madeAt,
    adminKey,
    aliceKey,
    revokedKey,
    registry: { id: registryId, ...registry },
    podTemplateId: podTemplate.id,
    serverlessTemplateId: serverlessTemplate.id,
    pods,
    volume: { id: volume.id, name: 'fixture-volume', size: 10 },
    endpoint: { id: endpoint.id, name: 'fixture-endpoint' },
    jobs: { completed: { id: done.id, output }, queued: { id: queued.id, input: queuedInput } },
    host: { id: joined.hostId, name: 'fixture-host', credential: joined.credential },
  };
}

/**
 * Checks that every object of `world` is on the server at `url` and works: the keys authenticate
 * (the revoked one does not), the pods are listed with their fields and start, the queued job is
 * taken by a worker and completed, the host's credential still reports, and the registry
 * credential's sealed secrets open with the data dir's key (`openSealed`, the test's reading of the
 * store). Leaves the pod it started stopped.
 */
export async function checkWorld(
  url: string,
  world: World,
  gantry: GantryCli,
  openSealed: () => Promise<{ username: string; password: string }>,
): Promise<void> {
  const call = (method: string, path: string, body?: unknown) =>
    ok(api(url, world.aliceKey, method, path, body), `${method} ${path}`);
  assert.equal((await api(url, world.revokedKey, 'GET', '/v1/pods')).status, 401, 'the revoked key stays revoked');
  assert.equal((await api(url, world.adminKey, 'GET', '/v1/pods')).status, 200, 'the admin key authenticates');

  const pods = (await call('GET', '/v1/pods')) as Array<Record<string, any>>;
  assert.deepEqual(pods.map((p) => p.id).sort(), world.pods.map((p) => p.id).sort(), 'every pod is listed');
  for (const expected of world.pods) {
    const pod = await call('GET', `/v1/pods/${expected.id}`);
    assert.deepEqual(
      [
        pod.name,
        pod.imageName,
        pod.gpuCount,
        pod.desiredStatus,
        pod.env?.FIXTURE_POD,
        pod.gpu?.id ?? pod.machine?.gpuTypeId,
      ],
      [expected.name, expected.imageName, expected.gpuCount, 'EXITED', expected.env.FIXTURE_POD, WORLD_GPU],
      `pod ${expected.name} keeps its fields`,
    );
  }
  const graphql = await call('POST', '/graphql', { query: '{ myself { pods { id name } endpoints { id name } } }' });
  assert.deepEqual(
    (graphql.data.myself.pods as Array<{ name: string }>).map((p) => p.name).sort(),
    world.pods.map((p) => p.name).sort(),
    'GraphQL lists the pods',
  );
  assert.deepEqual(graphql.data.myself.endpoints, [{ id: world.endpoint.id, name: world.endpoint.name }]);

  const [first] = world.pods;
  await call('POST', `/v1/pods/${first!.id}/start`);
  await eventually(
    'the restored pod running',
    async () => (await call('GET', `/v1/pods/${first!.id}`)).desiredStatus === 'RUNNING',
  );

  assert.equal((await call('GET', `/v1/templates/${world.podTemplateId}`)).name, 'fixture-pod-template');
  assert.equal((await call('GET', `/v1/templates/${world.serverlessTemplateId}`)).isServerless, true);
  assert.equal((await call('GET', `/v1/containerregistryauth/${world.registry.id}`)).name, world.registry.name);
  const volume = await call('GET', `/v1/networkvolumes/${world.volume.id}`);
  assert.deepEqual([volume.name, volume.size], [world.volume.name, world.volume.size]);
  const endpoint = await call('GET', `/v1/endpoints/${world.endpoint.id}`);
  assert.deepEqual([endpoint.name, endpoint.templateId], [world.endpoint.name, world.serverlessTemplateId]);

  const ep = world.endpoint.id;
  const completed = await call('GET', `/v2/${ep}/status/${world.jobs.completed.id}`);
  assert.deepEqual([completed.status, completed.output], ['COMPLETED', world.jobs.completed.output]);
  assert.equal((await call('GET', `/v2/${ep}/status/${world.jobs.queued.id}`)).status, 'IN_QUEUE');
  const taken = await call('GET', `/v2/${ep}/job-take/upgraded-worker`);
  assert.deepEqual(
    [taken.id, taken.input],
    [world.jobs.queued.id, world.jobs.queued.input],
    'a worker takes the queued job',
  );
  await call('POST', `/v2/${ep}/job-done/upgraded-worker/${taken.id}`, { output: { ok: true } });
  await eventually('the queued job completed', async () => {
    const s = await call('GET', `/v2/${ep}/status/${taken.id}`);
    return s.status === 'COMPLETED' && JSON.stringify(s.output) === '{"ok":true}';
  });

  const hosts = JSON.parse(cliOk(gantry, ['hosts', 'list', '--json'])) as Array<{ id: string; name: string }>;
  assert.deepEqual(
    hosts.map((h) => [h.id, h.name]),
    [[world.host.id, world.host.name]],
    'the host is listed',
  );
  const report = await api(url, world.host.credential, 'POST', '/agent/v1/report', {});
  assert.equal(report.status, 200, `the host's agent still reports: ${JSON.stringify(report.body)}`);

  assert.deepEqual(await openSealed(), { username: world.registry.username, password: world.registry.password });

  await call('POST', `/v1/pods/${first!.id}/stop`);
  await eventually(
    'the restored pod stopped',
    async () => (await call('GET', `/v1/pods/${first!.id}`)).desiredStatus === 'EXITED',
  );
}
