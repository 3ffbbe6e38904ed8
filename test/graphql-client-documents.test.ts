/**
 * The GraphQL documents runpodctl and runpod-python send (test/fixtures/graphql-clients/, one file
 * per document, its first line naming the client's source file and function), each sent over HTTP
 * to a listening Gantry server with the variables the client sends, and its answer checked for the
 * shape the platform gives: no errors, every selected field present with the platform's type, and
 * what a mutation made readable over REST.
 */
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { startListeningServer, type ListeningServer } from './support/harness.js';
import { clientDocument } from './fixtures/client-graphql-documents.js';

const FIXTURES = new URL('./fixtures/graphql-clients/', import.meta.url);
type Client = 'runpodctl' | 'runpod-python';

/** A fixture document with its `__NAME__` placeholders (ids made earlier in the run) filled in. */
const documentOf = (client: Client, name: string, ids: Record<string, string> = {}): string =>
  clientDocument(client, name, ids);

/**
 * The platform's type of each selected field: 'string', 'number', 'int', 'boolean', a nested
 * shape, or a one-element array for a list; a trailing '?' (or a Maybe around a shape) allows null,
 * as the platform answers for that field.
 */
type Shape = string | { [field: string]: Shape } | [Shape] | Maybe;

/** A shape the platform answers as null at times (a pod's runtime before it runs). */
class Maybe {
  constructor(readonly inner: Shape) {}
}

function assertShape(value: unknown, shape: Shape, path = 'data'): void {
  if (shape instanceof Maybe) {
    if (value !== null) assertShape(value, shape.inner, path);
    return;
  }
  if (typeof shape === 'string') {
    const nullable = shape.endsWith('?');
    const kind = nullable ? shape.slice(0, -1) : shape;
    if (value === null && nullable) return;
    if (kind === 'int') assert.ok(Number.isInteger(value), `${path}: ${JSON.stringify(value)} is not an Int`);
    else assert.equal(typeof value, kind, `${path}: ${JSON.stringify(value)} is not a ${kind}`);
    return;
  }
  if (Array.isArray(shape)) {
    assert.ok(Array.isArray(value), `${path}: ${JSON.stringify(value)} is not a list`);
    value.forEach((item, i) => assertShape(item, shape[0], `${path}[${i}]`));
    return;
  }
  assert.ok(value !== null && typeof value === 'object', `${path}: ${JSON.stringify(value)} is not an object`);
  assert.deepEqual(Object.keys(value).sort(), Object.keys(shape).sort(), `${path}: the fields selected`);
  for (const [field, inner] of Object.entries(shape))
    assertShape((value as Record<string, unknown>)[field], inner, `${path}.${field}`);
}

let server: ListeningServer;
let alice: { accountId: string; key: string };
let bob: { accountId: string; key: string };
const answers: string[] = [];

async function post(query: string, variables: Record<string, unknown> | undefined, key: string) {
  const res = await fetch(`${server.server.url}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables: variables ?? {} }),
  });
  const text = await res.text();
  answers.push(text);
  assert.equal(res.status, 200, text);
  return JSON.parse(text) as { data?: any; errors?: Array<{ message: string; extensions?: { code?: string } }> };
}

/** Runs a client document as alice and answers its data, failing on any GraphQL error. */
async function run(client: Client, name: string, options: { ids?: Record<string, string>; variables?: any } = {}) {
  const body = await post(documentOf(client, name, options.ids), options.variables, alice.key);
  assert.equal(body.errors, undefined, `${client}/${name}: ${JSON.stringify(body.errors)}`);
  return body.data;
}

async function rest(method: string, path: string, body?: unknown, key = alice.key) {
  const res = await fetch(`${server.server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function newAccount(name: string) {
  const { accounts } = server.server.services;
  const account = await accounts.createAccount(name);
  const { key } = await accounts.createKey(account.id, { scope: 'write' });
  return { accountId: account.id, key };
}

before(async () => {
  server = await startListeningServer();
  alice = await newAccount('alice');
  bob = await newAccount('bob');
});
after(() => server.close());

const POD_READ: Record<string, Shape> = {
  id: 'string',
  containerDiskInGb: 'int',
  costPerHr: 'number',
  desiredStatus: 'string',
  dockerArgs: 'string',
  env: ['string'],
  gpuCount: 'int',
  imageName: 'string',
  lastStatusChange: 'string',
  memoryInGb: 'number?',
  name: 'string',
  podType: 'string',
  ports: 'string',
  uptimeSeconds: 'int',
  vcpuCount: 'number?',
  volumeInGb: 'int',
  volumeMountPath: 'string?',
};
const RUNTIME: Shape = {
  ports: [{ ip: 'string?', isIpPublic: 'boolean', privatePort: 'int', publicPort: 'int?', type: 'string' }],
};
const CTL_RUNTIME: Shape = {
  ports: [{ ip: 'string?', isIpPublic: 'boolean', privatePort: 'int', publicPort: 'int?', PortType: 'string' }],
};

describe('runpod-python documents', () => {
  const ids: Record<string, string> = {};

  test('get_user answers the id, the SSH keys and each network volume with its data center', async () => {
    const created = await rest('POST', '/v2/network-volumes', { name: 'py-vol', size: 10, dataCenterId: 'EU-RO-1' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const { myself } = await run('runpod-python', 'get-user');
    assertShape(myself, {
      id: 'string',
      pubKey: 'string',
      networkVolumes: [{ id: 'string', name: 'string', size: 'int', dataCenterId: 'string' }],
    });
    assert.deepEqual(myself.networkVolumes, [
      { id: created.body.id, name: 'py-vol', size: 10, dataCenterId: 'EU-RO-1' },
    ]);
  });

  test('update_user_settings stores the key and answers it as pubKey', async () => {
    const { updateUserSettings } = await run('runpod-python', 'update-user-settings');
    assertShape(updateUserSettings, { id: 'string', pubKey: 'string' });
    assert.match(updateUserSettings.pubKey, /^ssh-ed25519 \S+ py@gantry$/);
    const { myself } = await run('runpod-python', 'get-user');
    assert.equal(myself.pubKey, updateUserSettings.pubKey);
  });

  test('get_gpus lists the catalog and get_gpu answers one GPU type with its prices', async () => {
    const { gpuTypes } = await run('runpod-python', 'get-gpus');
    assertShape(gpuTypes, [{ id: 'string', displayName: 'string', memoryInGb: 'int' }]);
    assert.ok(gpuTypes.some((g: { id: string }) => g.id === 'NVIDIA GeForce RTX 4090'));
    const one = (await run('runpod-python', 'get-gpu')).gpuTypes;
    assertShape(one, [
      {
        maxGpuCount: 'int',
        id: 'string',
        displayName: 'string',
        manufacturer: 'string',
        memoryInGb: 'int',
        cudaCores: 'int?',
        secureCloud: 'boolean',
        communityCloud: 'boolean',
        securePrice: 'number?',
        communityPrice: 'number?',
        oneMonthPrice: 'number?',
        threeMonthPrice: 'number?',
        oneWeekPrice: 'number?',
        communitySpotPrice: 'number?',
        secureSpotPrice: 'number?',
        lowestPrice: { minimumBidPrice: 'number?', uninterruptablePrice: 'number?' },
      },
    ]);
    assert.equal(one.length, 1);
    assert.equal(one[0].id, 'NVIDIA GeForce RTX 4090');
  });

  test('create_template makes a pod template REST reads back with its ports, env and start command', async () => {
    const { saveTemplate } = await run('runpod-python', 'create-template');
    assertShape(saveTemplate, {
      id: 'string',
      name: 'string',
      imageName: 'string',
      dockerArgs: 'string',
      containerDiskInGb: 'int',
      volumeInGb: 'int',
      volumeMountPath: 'string?',
      ports: 'string',
      env: [{ key: 'string', value: 'string' }],
      isServerless: 'boolean',
    });
    const read = await rest('GET', `/v2/templates/${saveTemplate.id}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.image, 'runpod/stack');
    assert.deepEqual(read.body.ports, ['8888/http', '22/tcp']);
    assert.deepEqual(read.body.env, { A: '1' });
    assert.equal(saveTemplate.dockerArgs, 'bash -c "sleep infinity"');
    ids.POD_TEMPLATE_ID = saveTemplate.id;
  });

  test('container registry auth is created, updated and deleted, and its password never answered', async () => {
    const { saveRegistryAuth } = await run('runpod-python', 'create-registry-auth');
    assertShape(saveRegistryAuth, { id: 'string', name: 'string' });
    ids.REGISTRY_AUTH_ID = saveRegistryAuth.id;
    const { updateRegistryAuth } = await run('runpod-python', 'update-registry-auth', { ids });
    assert.deepEqual(updateRegistryAuth, saveRegistryAuth);
    const { saveTemplate } = await run('runpod-python', 'create-serverless-template', { ids });
    assert.equal(saveTemplate.isServerless, true);
    ids.TEMPLATE_ID = saveTemplate.id;
    assert.equal((await rest('GET', `/v2/templates/${saveTemplate.id}`)).body.registry, ids.REGISTRY_AUTH_ID);
    // Bob may not touch it: the same document as bob answers NOT_FOUND.
    const asBob = await post(documentOf('runpod-python', 'update-registry-auth', ids), undefined, bob.key);
    assert.equal(asBob.errors?.[0]?.extensions?.code, 'NOT_FOUND');
    for (const answer of answers) assert.ok(!/py-Secret-045/.test(answer), answer);
  });

  test('create_endpoint makes an endpoint; get_endpoints lists it; update_endpoint_template swaps its template', async () => {
    const { saveEndpoint } = await run('runpod-python', 'create-endpoint', { ids });
    assertShape(saveEndpoint, {
      id: 'string',
      name: 'string',
      templateId: 'string',
      gpuIds: 'string',
      networkVolumeId: 'string?',
      locations: 'string',
      idleTimeout: 'int',
      scalerType: 'string',
      scalerValue: 'int',
      workersMin: 'int',
      workersMax: 'int',
      allowedCudaVersions: 'string',
      gpuCount: 'int',
      flashBootType: 'string',
    });
    assert.equal(saveEndpoint.flashBootType, 'OFF');
    assert.equal((await rest('GET', `/v2/serverless/${saveEndpoint.id}`)).status, 200);
    ids.ENDPOINT_ID = saveEndpoint.id;
    const { myself } = await run('runpod-python', 'get-endpoints');
    assertShape(myself.endpoints, [ENDPOINT_LIST_ITEM]);
    assert.deepEqual(
      myself.endpoints.map((e: { id: string }) => e.id),
      [saveEndpoint.id],
    );
    const other = (
      await rest('POST', '/v2/templates', { name: 'py-worker-2', imageName: 'my-worker:2', isServerless: true })
    ).body.id as string;
    const { updateEndpointTemplate } = await run('runpod-python', 'update-endpoint-template', {
      ids: { ...ids, TEMPLATE_ID: other },
    });
    assert.deepEqual(updateEndpointTemplate, { id: saveEndpoint.id, templateId: other });
  });

  test('create_pod with a GPU type makes a GPU pod that get_pod, get_pods, stop, resume and terminate drive', async () => {
    const { podFindAndDeployOnDemand: created } = await run('runpod-python', 'create-pod-gpu');
    assertShape(created, {
      id: 'string',
      imageName: 'string',
      env: ['string'],
      machineId: 'string',
      machine: { podHostId: 'string' },
    });
    const read = await rest('GET', `/v2/pods/${created.id}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.gpu.count, 1);
    const podIds = { POD_ID: created.id };
    const { pod } = await run('runpod-python', 'get-pod', { ids: podIds });
    assert.notEqual(pod.runtime, null, 'a RUNNING pod answers its runtime');
    assertShape(pod, {
      ...POD_READ,
      dockerId: 'string?',
      machineId: 'string',
      port: 'int?',
      runtime: new Maybe(RUNTIME),
      machine: { gpuDisplayName: 'string' },
    });
    const { myself } = await run('runpod-python', 'get-pods');
    assert.ok(myself.pods.some((p: { id: string }) => p.id === created.id));
    const { podStop } = await run('runpod-python', 'stop-pod', { ids: podIds });
    assert.deepEqual(podStop, { id: created.id, desiredStatus: 'EXITED' });
    const { podResume } = await run('runpod-python', 'resume-pod', { ids: podIds });
    assertShape(podResume, {
      id: 'string',
      desiredStatus: 'string',
      imageName: 'string',
      env: ['string'],
      machineId: 'string',
      machine: { podHostId: 'string' },
    });
    assert.equal(podResume.desiredStatus, 'RUNNING');
    assert.deepEqual(await run('runpod-python', 'terminate-pod', { ids: podIds }), { podTerminate: null });
    assert.equal((await rest('GET', `/v2/pods/${created.id}`)).body.status, 'TERMINATED');
  });

  test('create_pod with a CPU instance id and no GPU type makes a CPU pod of that flavor and size', async () => {
    const { deployCpuPod: created } = await run('runpod-python', 'create-pod-cpu');
    assertShape(created, {
      id: 'string',
      imageName: 'string',
      env: ['string'],
      machineId: 'string',
      machine: { podHostId: 'string' },
    });
    assert.equal(created.imageName, 'runpod/stack');
    const read = await rest('GET', `/v2/pods/${created.id}`);
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.equal(read.body.gpu, undefined);
    assert.equal(read.body.cpu.id, 'cpu3c');
    // The platform's "runpod-ubuntu" template the SDK names is Gantry's Ubuntu CPU template (SSH on 22).
    assert.deepEqual(read.body.ports, ['22/tcp']);
    assert.equal(read.body.image, 'runpod/stack');
    assert.equal(read.body.cpu.vcpuCount, 2);
    assert.equal(read.body.cpu.memory, 4);
    assert.equal(read.body.disk, 10);
  });
});

const ENDPOINT_LIST_ITEM: Shape = {
  aiKey: 'string?',
  gpuIds: 'string',
  id: 'string',
  idleTimeout: 'int',
  name: 'string',
  networkVolumeId: 'string?',
  locations: 'string',
  scalerType: 'string',
  scalerValue: 'int',
  templateId: 'string',
  type: 'string',
  userId: 'string',
  version: 'int',
  workersMax: 'int',
  workersMin: 'int',
  workersStandby: 'int',
  gpuCount: 'int',
  env: [{ key: 'string', value: 'string' }],
  createdAt: 'string',
  networkVolume: new Maybe({ id: 'string', dataCenterId: 'string' }),
};

describe('runpodctl documents', () => {
  const ids: Record<string, string> = {};
  const SSH_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICtlRunpodctlKeyRunpodctlKeyRunpodctlKey ctl@gantry';

  test('the lowest-price query answers one price per GPU type for the asked GPU count', async () => {
    const { gpuTypes } = await run('runpodctl', 'get-cloud', {
      variables: { input: { gpuCount: 1, secureCloud: null } },
    });
    assertShape(gpuTypes, [
      {
        lowestPrice: {
          gpuName: 'string',
          gpuTypeId: 'string',
          minimumBidPrice: 'number?',
          uninterruptablePrice: 'number?',
          minMemory: 'int?',
          minVcpu: 'int?',
        },
      },
    ]);
    assert.ok(gpuTypes.some((g: any) => typeof g.lowestPrice.uninterruptablePrice === 'number'));
  });

  test('GPU types, serverless GPU pools, data centers and the user answer every field runpodctl selects', async () => {
    const { gpuTypes } = await run('runpodctl', 'list-gpu-types');
    assertShape(gpuTypes, [
      { id: 'string', displayName: 'string', memoryInGb: 'int', secureCloud: 'boolean', communityCloud: 'boolean' },
    ]);
    const { serverlessGpuPools } = await run('runpodctl', 'list-serverless-gpu-pools');
    assertShape(serverlessGpuPools, [{ id: 'string', gpuTypeIds: ['string'] }]);
    const { dataCenters } = await run('runpodctl', 'list-data-centers');
    assertShape(dataCenters, [
      {
        id: 'string',
        name: 'string',
        location: 'string',
        gpuAvailability: [{ gpuTypeId: 'string', displayName: 'string', stockStatus: 'string?' }],
      },
    ]);
    assert.ok(dataCenters.some((d: any) => d.id === 'EU-RO-1' && d.gpuAvailability.length > 0));
    const { myself } = await run('runpodctl', 'get-user');
    assertShape(myself, {
      id: 'string',
      email: 'string?',
      clientBalance: 'number',
      currentSpendPerHr: 'number',
      spendLimit: 'int?',
      notifyPodsStale: 'boolean',
      notifyPodsGeneral: 'boolean',
      notifyLowBalance: 'boolean',
    });
    assert.equal(myself.id, alice.accountId);
  });

  test('the SSH key documents read the keys and add one through updateUserSettings', async () => {
    const before = (await run('runpodctl', 'get-public-ssh-keys')).myself;
    assertShape(before, { id: 'string', pubKey: 'string' });
    const pubKey = [before.pubKey.trim(), SSH_KEY].filter((k) => k !== '').join('\n\n');
    const { updateUserSettings } = await run('runpodctl', 'update-user-settings-ssh-keys', {
      variables: { input: { pubKey } },
    });
    assertShape(updateUserSettings, { id: 'string' });
    const after = (await run('runpodctl', 'get-public-ssh-keys')).myself;
    assert.ok(after.pubKey.split('\n').includes(SSH_KEY), after.pubKey);
  });

  test('the network volume query lists the account’s volumes', async () => {
    const { myself } = await run('runpodctl', 'get-network-volumes');
    assertShape(myself, { networkVolumes: [{ dataCenterId: 'string', id: 'string', name: 'string', size: 'int' }] });
  });

  test('the legacy template and endpoint creates, endpoint list and template swap work with Go’s zero values', async () => {
    const { saveTemplate } = await run('runpodctl', 'create-template', {
      variables: {
        input: {
          name: 'ctl-worker',
          imageName: 'my-worker:ctl',
          dockerArgs: '',
          containerDiskInGb: 5,
          volumeInGb: 0,
          volumeMountPath: '',
          ports: '',
          env: [{ key: 'MODE', value: 'ctl' }],
          isServerless: true,
          startSsh: false,
          isPublic: false,
          readme: '',
        },
      },
    });
    assertShape(saveTemplate, {
      advancedStart: 'boolean',
      containerDiskInGb: 'int',
      dockerArgs: 'string',
      env: [{ key: 'string', value: 'string' }],
      id: 'string',
      imageName: 'string',
      name: 'string',
      ports: 'string',
      readme: 'string',
      startJupyter: 'boolean',
      startScript: 'string?',
      startSsh: 'boolean',
      volumeInGb: 'int',
      volumeMountPath: 'string?',
    });
    ids.TEMPLATE_ID = saveTemplate.id;
    const { saveEndpoint } = await run('runpodctl', 'create-endpoint', {
      variables: {
        input: {
          name: 'ctl-endpoint',
          templateId: saveTemplate.id,
          gpuIds: 'AMPERE_16',
          networkVolumeId: '',
          locations: '',
          idleTimeout: 5,
          scalerType: 'QUEUE_DELAY',
          scalerValue: 4,
          workersMin: 0,
          workersMax: 3,
          flashBootType: '',
          modelReferences: null,
        },
      },
    });
    assertShape(saveEndpoint, {
      gpuIds: 'string',
      id: 'string',
      idleTimeout: 'int',
      locations: 'string',
      name: 'string',
      networkVolumeId: 'string?',
      scalerType: 'string',
      scalerValue: 'int',
      templateId: 'string',
      userId: 'string',
      workersMax: 'int',
      workersMin: 'int',
    });
    assert.equal((await rest('GET', `/v2/serverless/${saveEndpoint.id}`)).status, 200);
    ids.ENDPOINT_ID = saveEndpoint.id;
    const { myself } = await run('runpodctl', 'get-endpoints');
    assertShape(myself.endpoints, [ENDPOINT_LIST_ITEM]);
    const other = (
      await rest('POST', '/v2/templates', { name: 'ctl-worker-2', imageName: 'my-worker:ctl2', isServerless: true })
    ).body.id as string;
    const { updateEndpointTemplate } = await run('runpodctl', 'update-endpoint-template', {
      variables: { input: { endpointId: saveEndpoint.id, templateId: other } },
    });
    assert.deepEqual(updateEndpointTemplate, { id: saveEndpoint.id, templateId: other });
    ids.SWAPPED_TEMPLATE_ID = other;
  });

  const SAVE_ENDPOINT_GQL: Shape = {
    id: 'string',
    name: 'string',
    templateId: 'string',
    gpuIds: 'string',
    instanceIds: ['string'],
    computeType: 'string',
    networkVolumeId: 'string?',
    networkVolumeIds: [{ networkVolumeId: 'string', dataCenterId: 'string' }],
    locations: 'string',
    idleTimeout: 'int',
    scalerType: 'string',
    scalerValue: 'int',
    workersMin: 'int',
    workersMax: 'int',
    gpuCount: 'int',
    minCudaVersion: 'string?',
    executionTimeoutMs: 'int',
    flashBootType: 'string',
    modelReferences: ['string'],
  };

  test('serverless create with an inline template makes the endpoint and its template', async () => {
    const { saveEndpoint } = await run('runpodctl', 'create-endpoint-gql', {
      variables: {
        input: {
          name: 'ctl-inline',
          template: {
            name: 'ctl-inline-template',
            imageName: 'my-worker:inline',
            containerDiskInGb: 5,
            dockerArgs: '',
            env: [{ key: 'A', value: '1' }],
          },
          gpuIds: 'ADA_24',
          gpuCount: 1,
          workersMax: 2,
          idleTimeout: 5,
          scalerType: 'QUEUE_DELAY',
          scalerValue: 4,
          executionTimeoutMs: 600000,
          flashBootType: 'FLASHBOOT',
        },
      },
    });
    assertShape(saveEndpoint, SAVE_ENDPOINT_GQL);
    const template = await rest('GET', `/v2/templates/${saveEndpoint.templateId}`);
    assert.equal(template.body.image, 'my-worker:inline');
    assert.equal((await rest('GET', `/v2/serverless/${saveEndpoint.id}`)).status, 200);
  });

  test('setting model references round-trips the endpoint as REST reads it through saveEndpoint', async () => {
    // runpodctl reads the endpoint over REST first; Gantry's REST shape names its fields differently.
    const endpoint = (await rest('GET', `/v2/serverless/${ids.ENDPOINT_ID}`)).body;
    const { saveEndpoint } = await run('runpodctl', 'update-endpoint-models', {
      variables: {
        input: {
          id: endpoint.id,
          name: endpoint.name,
          templateId: ids.SWAPPED_TEMPLATE_ID,
          gpuIds: endpoint.gpu.pools.join(','),
          gpuCount: endpoint.gpu.count,
          instanceIds: [],
          workersMin: endpoint.workers.min,
          workersMax: endpoint.workers.max,
          locations: '',
          networkVolumeId: '',
          networkVolumeIds: [],
          idleTimeout: endpoint.workers.idleTimeout,
          scalerType: endpoint.scaling.type,
          scalerValue: endpoint.scaling.queueDelay ?? endpoint.scaling.requestCount ?? 4,
          executionTimeoutMs: 600000,
          minCudaVersion: '12.4',
          flashBootType: endpoint.flashboot,
          modelReferences: ['org/model:main'],
        },
      },
    });
    const { computeType: _c, networkVolumeIds: _n, ...rest_ } = SAVE_ENDPOINT_GQL as Record<string, Shape>;
    assertShape(saveEndpoint, { ...rest_, networkVolumeIds: [{ networkVolumeId: 'string' }] });
    assert.equal(saveEndpoint.id, endpoint.id);
    assert.equal(saveEndpoint.workersMax, endpoint.workers.max);
    const after = (await rest('GET', `/v2/serverless/${ids.ENDPOINT_ID}`)).body;
    assert.ok(after.allowedCudaVersions.length > 0, JSON.stringify(after.allowedCudaVersions));
    assert.ok(
      after.allowedCudaVersions.every((v: string) => Number(v) >= 12.4),
      JSON.stringify(after),
    );
  });

  test('the port-label documents read the templates and save them back with portsConfig', async () => {
    const created = await rest('POST', '/v2/templates', {
      name: 'ctl-labels',
      imageName: 'ubuntu:22.04',
      ports: ['8888/http', '22/tcp'],
    });
    const { myself } = await run('runpodctl', 'get-template-save-state');
    const state = myself.podTemplates.find((t: { id: string }) => t.id === created.body.id);
    assertShape(state, {
      id: 'string',
      name: 'string',
      imageName: 'string',
      dockerArgs: 'string',
      env: [{ key: 'string', value: 'string' }],
      ports: 'string',
      volumeMountPath: 'string?',
      volumeInGb: 'int',
      containerDiskInGb: 'int',
      containerRegistryAuthId: 'string?',
      startJupyter: 'boolean',
      startSsh: 'boolean',
      startScript: 'string?',
      isServerless: 'boolean',
      isPublic: 'boolean',
      readme: 'string',
      advancedStart: 'boolean',
      category: 'string',
    });
    const { saveTemplate } = await run('runpodctl', 'update-template-port-labels', {
      variables: {
        input: {
          id: state.id,
          name: state.name,
          imageName: state.imageName,
          containerDiskInGb: state.containerDiskInGb,
          containerRegistryAuthId: state.containerRegistryAuthId ?? '',
          dockerArgs: state.dockerArgs,
          env: state.env,
          ports: state.ports,
          portsConfig: [
            { port: '8888', name: 'Jupyter' },
            { port: '22', name: 'SSH' },
          ],
          volumeInGb: state.volumeInGb,
          isPublic: state.isPublic,
          isServerless: state.isServerless,
          startJupyter: state.startJupyter,
          startSsh: state.startSsh,
          advancedStart: state.advancedStart,
          readme: state.readme,
          ...(state.category ? { category: state.category } : {}),
        },
      },
    });
    assert.deepEqual(saveTemplate, { id: state.id });
    const { podTemplate } = await run('runpodctl', 'get-template-by-id', { variables: { id: state.id } });
    assertShape(podTemplate, {
      id: 'string',
      name: 'string',
      imageName: 'string',
      isServerless: 'boolean',
      isPublic: 'boolean',
      isRunpod: 'boolean',
      category: 'string',
      ports: 'string',
      portsConfig: [{ port: 'string', name: 'string?' }],
      env: [{ key: 'string', value: 'string' }],
      containerDiskInGb: 'int',
      containerRegistryAuthId: 'string?',
      volumeInGb: 'int',
      volumeMountPath: 'string?',
      readme: 'string',
    });
    assert.equal(podTemplate.ports, '8888/http,22/tcp');
    // Another account's private template is not found.
    const asBob = await post(documentOf('runpodctl', 'get-template-by-id'), { id: state.id }, bob.key);
    assert.equal(asBob.errors?.[0]?.extensions?.code, 'NOT_FOUND');
  });

  test('the template catalog query lists Gantry’s shipped templates for isRunpod true and no account’s own', async () => {
    const shape: Shape = [
      {
        id: 'string',
        name: 'string',
        imageName: 'string',
        isServerless: 'boolean',
        isPublic: 'boolean',
        isRunpod: 'boolean',
        category: 'string',
        containerDiskInGb: 'int',
        volumeInGb: 'int',
        volumeMountPath: 'string?',
      },
    ];
    const official = (await run('runpodctl', 'list-all-templates', { variables: { input: { isRunpod: true } } }))
      .podTemplates;
    assertShape(official, shape);
    assert.ok(official.some((t: { id: string }) => t.id === 'gantry-ubuntu-cpu'));
    assert.ok(official.every((t: { isRunpod: boolean; isPublic: boolean }) => t.isRunpod && t.isPublic));
    // Accounts cannot publish templates on Gantry (403), so there is no community template, and
    // no account's own template (alice has several by now) is listed as one.
    const community = (await run('runpodctl', 'list-all-templates', { variables: { input: { isRunpod: false } } }))
      .podTemplates;
    assert.deepEqual(community, []);
  });

  test('pods are created, listed, stopped, resumed (on demand and by bid) and terminated', async () => {
    const legacy = await run('runpodctl', 'create-pod', {
      variables: {
        input: {
          cloudType: 'ALL',
          containerDiskInGb: 20,
          dockerArgs: '',
          dataCenterId: '',
          env: [{ key: 'A', value: '1' }],
          gpuCount: 1,
          gpuTypeId: 'NVIDIA GeForce RTX 4090',
          imageName: 'ubuntu:22.04',
          minMemoryInGb: 0,
          minVcpuCount: 0,
          name: 'ctl-pod',
          networkVolumeId: '',
          ports: '8888/http,22/tcp',
          supportPublicIp: true,
          startSsh: true,
          templateId: '',
          volumeInGb: 0,
          volumeMountPath: '/workspace',
        },
      },
    });
    assertShape(legacy.podFindAndDeployOnDemand, {
      id: 'string',
      costPerHr: 'number',
      desiredStatus: 'string',
      lastStatusChange: 'string',
    });
    const podId = legacy.podFindAndDeployOnDemand.id as string;
    assert.equal((await rest('GET', `/v2/pods/${podId}`)).status, 200);

    const modern = await run('runpodctl', 'create-pod-gql-client', {
      variables: {
        input: {
          cloudType: 'SECURE',
          containerDiskInGb: 20,
          gpuCount: 1,
          gpuTypeId: 'NVIDIA GeForce RTX 4090',
          imageName: 'ubuntu:22.04',
          name: 'ctl-pod-2',
          startSsh: true,
          ports: '8888/http',
          volumeInGb: 20,
          volumeMountPath: '/workspace',
          env: [{ key: 'B', value: '2' }],
        },
      },
    });
    assertShape(modern.podFindAndDeployOnDemand, {
      id: 'string',
      name: 'string',
      imageName: 'string',
      desiredStatus: 'string',
      costPerHr: 'number',
      containerDiskInGb: 'int',
      volumeInGb: 'int',
      volumeMountPath: 'string?',
      gpuCount: 'int',
      memoryInGb: 'number?',
      vcpuCount: 'number?',
      ports: 'string',
      lastStatusChange: 'string',
      env: ['string'],
      machine: { gpuDisplayName: 'string', location: 'string' },
    });
    assert.equal(modern.podFindAndDeployOnDemand.volumeInGb, 20);
    // A time to stop at that is not a date-time is refused rather than dropped: the pod would otherwise run on.
    const stopAfter = await post(
      documentOf('runpodctl', 'create-pod-gql-client'),
      {
        input: {
          cloudType: 'SECURE',
          containerDiskInGb: 20,
          gpuCount: 1,
          gpuTypeId: 'NVIDIA GeForce RTX 4090',
          imageName: 'ubuntu:22.04',
          startSsh: true,
          stopAfter: 'next tuesday',
        },
      },
      alice.key,
    );
    assert.match(stopAfter.errors?.[0]?.message ?? '', /^stopAfter "next tuesday" is not a date-time/);

    const listed = (await run('runpodctl', 'get-pods')).myself.pods;
    assertShape(listed, [
      {
        ...POD_READ,
        dockerId: 'string?',
        machineId: 'string',
        port: 'int?',
        machine: { gpuDisplayName: 'string?', location: 'string' },
        runtime: new Maybe(CTL_RUNTIME),
      },
    ]);
    // The ports runpodctl's ssh connect reads (isIpPublic): both of the legacy pod's, published; each
    // is listed first as the pod's own network reaches it (not public), as the platform lists them.
    const ports: Array<{ privatePort: number; PortType: string; isIpPublic: boolean }> = listed.find(
      (p: { id: string }) => p.id === podId,
    ).runtime.ports;
    const named = (list: typeof ports) => list.map((p) => `${p.privatePort}/${p.PortType}`).sort();
    assert.deepEqual(named(ports.filter((p) => p.isIpPublic)), ['22/tcp', '8888/http']);
    assert.deepEqual(named(ports.filter((p) => !p.isIpPublic)), ['22/tcp', '8888/http']);
    const listed2 = (await run('runpodctl', 'get-pods-gql-client')).myself.pods;
    assert.deepEqual(listed2.map((p: { id: string }) => p.id).sort(), listed.map((p: { id: string }) => p.id).sort());

    const { podStop } = await run('runpodctl', 'stop-pod', { variables: { podId } });
    assertShape(podStop, { id: 'string', desiredStatus: 'string', lastStatusChange: 'string' });
    assert.equal(podStop.desiredStatus, 'EXITED');
    const { podResume } = await run('runpodctl', 'start-on-demand-pod', { variables: { podId } });
    assertShape(podResume, { id: 'string', costPerHr: 'number', desiredStatus: 'string', lastStatusChange: 'string' });
    assert.equal(podResume.desiredStatus, 'RUNNING');
    await run('runpodctl', 'stop-pod', { variables: { podId } });
    const { podBidResume } = await run('runpodctl', 'start-spot-pod', {
      variables: { podId, bidPerGpu: 0.5, gpuCount: 1 },
    });
    assertShape(podBidResume, {
      id: 'string',
      costPerHr: 'number',
      desiredStatus: 'string',
      lastStatusChange: 'string',
    });
    assert.equal(podBidResume.desiredStatus, 'RUNNING');
    assert.deepEqual(await run('runpodctl', 'remove-pod', { variables: { podId } }), { podTerminate: null });
    assert.equal((await rest('GET', `/v2/pods/${podId}`)).body.status, 'TERMINATED');
  });

  test('model repository and hub documents answer that they are not supported by Gantry', async () => {
    const unsupported = readdirSync(new URL('runpodctl/', FIXTURES))
      .map((f) => f.replace(/\.graphql$/, ''))
      .filter((f) => /-models?(-|$)|model-repo|-listing/.test(f) && f !== 'update-endpoint-models');
    assert.deepEqual(unsupported.sort(), [
      'add-model-to-repo',
      'complete-model-repo-upload',
      'create-model-repo-upload',
      'get-listing',
      'get-listing-from-repo',
      'get-model',
      'get-models',
      'list-listings',
      'remove-model',
      'update-model-version-status',
    ]);
    for (const name of unsupported) {
      const body = await post(documentOf('runpodctl', name), { input: {} }, alice.key);
      assert.equal(body.data ?? null, null, name);
      assert.equal(body.errors?.length, 1, `${name}: ${JSON.stringify(body.errors)}`);
      assert.match(body.errors?.[0]?.message ?? '', /^[A-Za-z ]+ \(\w+\) is not supported by Gantry\.$/, name);
    }
  });
});
