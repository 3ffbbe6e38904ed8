import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, json, type TestApp } from './support/harness.js';
import { clientDocument } from './fixtures/client-graphql-documents.js';

/** runpod-python 1.12 `generate_endpoint_mutation` (flashboot, CUDA versions and gpu_count set). */
const pythonCreateEndpoint = (templateId: string) =>
  clientDocument('runpod-python', 'create-endpoint-flashboot', { TEMPLATE_ID: templateId });
/** runpod-python `QUERY_ENDPOINT` (also runpodctl's legacy endpoint list). */
const QUERY_ENDPOINT = clientDocument('runpod-python', 'get-endpoints');
/** runpodctl `CreateEndpointGQL`. */
const RUNPODCTL_SAVE_ENDPOINT = clientDocument('runpodctl', 'create-endpoint-gql');

let t: TestApp;
let alice: { accountId: string; key: string; readKey: string };
let bob: { accountId: string; key: string; readKey: string };
let workerTemplate: string;
const bodies: string[] = [];

before(async () => {
  t = await createTestApp();
  alice = await t.newAccount('alice');
  bob = await t.newAccount('bob');
  workerTemplate = (
    await t.services.templates.create(alice.accountId, {
      name: 'worker',
      imageName: 'my-worker:dev',
      isServerless: true,
    })
  ).id;
});
after(() => t.close());

/** POSTs like the clients do (Bearer key, JSON body) and keeps every answer for the secret check. */
async function gql(
  query: string,
  variables?: Record<string, unknown> | null,
  key = alice.key,
  extra: Record<string, unknown> = {},
): Promise<LightMyRequestResponse> {
  const res = await t.request(key, 'POST', '/graphql', {
    query,
    ...(variables !== undefined ? { variables } : {}),
    ...extra,
  });
  bodies.push(res.body);
  return res;
}
const data = async (query: string, variables?: Record<string, unknown> | null, key?: string) => {
  const res = await gql(query, variables, key);
  assert.equal(res.statusCode, 200);
  const body = json(res);
  assert.equal(body.errors, undefined, JSON.stringify(body.errors));
  return body.data;
};
const errorOf = async (query: string, variables?: Record<string, unknown> | null, key?: string) => {
  const res = await gql(query, variables, key);
  assert.equal(res.statusCode, 200);
  const body = json(res);
  assert.ok(body.errors?.length > 0, `expected errors in ${res.body}`);
  return body as {
    data: Record<string, unknown> | null;
    errors: Array<{ message: string; extensions: { code: string } }>;
  };
};

describe('GraphQL endpoints', () => {
  test('runpod-python’s saveEndpoint mutation creates an endpoint and reads back what it sent', async () => {
    const { saveEndpoint: e } = await data(pythonCreateEndpoint(workerTemplate));
    assert.deepEqual(
      { ...e, id: undefined },
      {
        id: undefined,
        name: 'py-endpoint',
        templateId: workerTemplate,
        gpuIds: 'ADA_24,AMPERE_24',
        networkVolumeId: null,
        locations: '',
        idleTimeout: 5,
        scalerType: 'QUEUE_DELAY',
        scalerValue: 4,
        workersMin: 0,
        workersMax: 3,
        allowedCudaVersions: '12.1,12.2',
        gpuCount: 2,
        flashBootType: 'FLASHBOOT',
      },
    );
    const stored = await t.services.endpoints.get(alice.accountId, e.id);
    assert.deepEqual(stored.allowedCudaVersions, ['12.1', '12.2']);
    assert.equal(stored.flashboot, true);
  });

  test('runpod-python’s endpoint list query answers every field it selects', async () => {
    const { myself } = await data(QUERY_ENDPOINT);
    const e = myself.endpoints.find((x: { name: string }) => x.name === 'py-endpoint');
    assert.ok(e);
    assert.equal(e.aiKey, null);
    assert.equal(e.type, 'QB');
    assert.equal(e.userId, alice.accountId);
    assert.equal(e.version, 1);
    assert.equal(e.workersStandby, 0);
    assert.deepEqual(e.env, []);
    assert.equal(e.networkVolume, null);
    assert.ok(!Number.isNaN(Date.parse(e.createdAt)));
    const { myself: other } = await data(QUERY_ENDPOINT, undefined, bob.key);
    assert.deepEqual(other.endpoints, []);
  });

  test("an endpoint's pods read RUNNING for live workers and EXITED for dead ones", async () => {
    const e = await t.services.endpoints.create(alice.accountId, {
      name: 'with-workers',
      templateId: workerTemplate,
      gpuIds: 'ADA_24',
      workersMax: 2,
    });
    await t.services.workers.seen(e.id, 'w-live', false);
    await t.services.workers.seen(e.id, 'w-gone', true);
    await t.services.workers.markDead(e.id, ['w-gone']);
    const { myself } = await data('{ myself { endpoints { id pods { id desiredStatus } } } }');
    const pods = myself.endpoints.find((x: { id: string }) => x.id === e.id).pods;
    assert.deepEqual(
      [...pods].sort((a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id)),
      [
        { id: 'w-gone', desiredStatus: 'EXITED' },
        { id: 'w-live', desiredStatus: 'RUNNING' },
      ],
    );
  });

  test('runpodctl’s typed-variables saveEndpoint works, flashBootType as a string and one networkVolumeIds entry', async () => {
    const volume = await t.services.volumes.create(alice.accountId, { name: 'vol', size: 10, dataCenterId: 'US-TX-3' });
    const input = {
      name: 'ctl-endpoint',
      templateId: workerTemplate,
      gpuIds: 'AMPERE_80',
      workersMax: 2,
      locations: 'US',
      networkVolumeIds: [{ networkVolumeId: volume.id }],
      idleTimeout: 10,
      scalerType: 'REQUEST_COUNT',
      scalerValue: 3,
      executionTimeoutMs: 60000,
      flashBootType: 'FLASHBOOT',
      modelReferences: [],
    };
    const { saveEndpoint: e } = await data(RUNPODCTL_SAVE_ENDPOINT, { input });
    assert.equal(e.networkVolumeId, volume.id);
    assert.deepEqual(e.networkVolumeIds, [{ networkVolumeId: volume.id, dataCenterId: 'US-TX-3' }]);
    assert.equal(e.computeType, 'GPU');
    assert.deepEqual(e.instanceIds, []);
    assert.equal(e.minCudaVersion, null);
    assert.equal(e.executionTimeoutMs, 60000);
    assert.equal(e.flashBootType, 'FLASHBOOT');
    assert.equal(e.scalerType, 'REQUEST_COUNT');
  });

  test('runpodctl’s legacy create (flashBootType "" and modelReferences null) is accepted as OFF', async () => {
    const query = `
		mutation saveEndpoint($input: EndpointInput!) {
			saveEndpoint(input: $input) {
			  gpuIds
			  id
			  idleTimeout
			  locations
			  name
			  networkVolumeId
			  scalerType
			  scalerValue
			  templateId
			  userId
			  workersMax
			  workersMin
			}
		  }
		`;
    const input = {
      name: 'legacy',
      templateId: workerTemplate,
      gpuIds: 'AMPERE_16',
      networkVolumeId: '',
      locations: '',
      idleTimeout: 5,
      scalerType: 'QUEUE_DELAY',
      scalerValue: 4,
      workersMin: 0,
      workersMax: 1,
      flashBootType: '',
      modelReferences: null,
    };
    const { saveEndpoint: e } = await data(query, { input });
    assert.equal((await t.services.endpoints.get(alice.accountId, e.id)).flashboot, false);
  });

  test('saveEndpoint with an id is a full replace: omitted fields return to their defaults and the version grows', async () => {
    const { saveEndpoint: created } = await data(
      // plus a field runpod-python does not send, so the replace below has one more to reset
      pythonCreateEndpoint(workerTemplate).replace('gpuCount: 2', 'gpuCount: 2, executionTimeoutMs: 90000'),
    );
    const { saveEndpoint: e } = await data(
      `mutation { saveEndpoint(input: {id: "${created.id}", name: "replaced", templateId: "${workerTemplate}", gpuIds: "AMPERE_48"}) { id name gpuIds gpuCount workersMax executionTimeoutMs flashBootType allowedCudaVersions version } }`,
    );
    assert.deepEqual(e, {
      id: created.id,
      name: 'replaced',
      gpuIds: 'AMPERE_48',
      gpuCount: 1,
      workersMax: 3,
      executionTimeoutMs: 600000,
      flashBootType: 'OFF',
      allowedCudaVersions: '',
      version: 2,
    });
  });

  test('runpodctl’s updateEndpointTemplate swaps the template', async () => {
    const other = (
      await t.services.templates.create(alice.accountId, {
        name: 'worker v2',
        imageName: 'my-worker:v2',
        isServerless: true,
      })
    ).id;
    const { saveEndpoint: created } = await data(pythonCreateEndpoint(workerTemplate));
    const query = `
		mutation Mutation($input: UpdateEndpointTemplateInput) {
			updateEndpointTemplate(input: $input) {
			  id
			  templateId
			}
		  }
		`;
    const { updateEndpointTemplate } = await data(query, { input: { endpointId: created.id, templateId: other } });
    assert.deepEqual(updateEndpointTemplate, { id: created.id, templateId: other });
    const { endpoint } = await data(`{ endpoint(id: "${created.id}") { template { id name imageName } } }`);
    assert.deepEqual(endpoint.template, { id: other, name: 'worker v2', imageName: 'my-worker:v2' });
  });

  test('deleteEndpoint is refused while workers are allowed, as an HTTP 200 error with message and code', async () => {
    const { saveEndpoint: e } = await data(pythonCreateEndpoint(workerTemplate));
    const refused = await errorOf(`mutation { deleteEndpoint(id: "${e.id}") }`);
    assert.deepEqual(refused.data, { deleteEndpoint: null });
    assert.equal(refused.errors[0]!.extensions.code, 'ENDPOINT_HAS_WORKERS');
    assert.match(refused.errors[0]!.message, /workersMin 0, workersMax 3\); set both to 0 first/);
    await data(
      `mutation { saveEndpoint(input: {id: "${e.id}", name: "x", templateId: "${workerTemplate}", gpuIds: "ADA_24", workersMin: 0, workersMax: 0}) { id } }`,
    );
    const res = await gql(`mutation { deleteEndpoint(id: "${e.id}") }`);
    assert.deepEqual(json(res), { data: { deleteEndpoint: null } });
  });

  test('a broken rule answers the service’s sentence and code; another account’s endpoint is not found', async () => {
    const bad = await errorOf(
      `mutation { saveEndpoint(input: {name: "x", templateId: "${workerTemplate}", gpuIds: "H200", workersMin: 5, workersMax: 1}) { id } }`,
    );
    assert.equal(bad.errors[0]!.extensions.code, 'VALIDATION_FAILED');
    assert.match(bad.errors[0]!.message, /gpuIds: "H200" is not a GPU pool; valid pools: AMPERE_16/);
    assert.match(bad.errors[0]!.message, /workersMax: must be at least workersMin \(5\)/);
    const { saveEndpoint: mine } = await data(pythonCreateEndpoint(workerTemplate));
    const stolen = await errorOf(`{ endpoint(id: "${mine.id}") { id } }`, undefined, bob.key);
    assert.equal(stolen.errors[0]!.extensions.code, 'NOT_FOUND');
    const flash = await errorOf(
      `mutation { saveEndpoint(input: {name: "x", templateId: "${workerTemplate}", gpuIds: "ADA_24", flashBootType: TURBO}) { id } }`,
    );
    assert.match(flash.errors[0]!.message, /flashBootType: "TURBO" is not valid; use FLASHBOOT or OFF/);
  });

  test('aliases and named operations are honoured; operationName picks one of several', async () => {
    const query = `
      query One { me: myself { id } }
      query Two { a: gpuTypes(input: {id: "NVIDIA L4"}) { name: displayName } b: serverlessGpuPools { id } }
    `;
    const res = await gql(query, null, alice.key, { operationName: 'Two' });
    const body = json(res);
    assert.deepEqual(body.data.a, [{ name: 'L4' }]);
    assert.ok(body.data.b.some((p: { id: string }) => p.id === 'ADA_24'));
    const one = json(await gql(query, null, alice.key, { operationName: 'One' }));
    assert.deepEqual(one.data, { me: { id: alice.accountId } });
  });
});

describe('GraphQL transport', () => {
  test('a bad or missing key answers HTTP 401', async () => {
    assert.equal(
      (await t.request('gty_not-a-real-key-at-all', 'POST', '/graphql', { query: '{ myself { id } }' })).statusCode,
      401,
    );
    assert.equal((await t.request(null, 'POST', '/graphql', { query: '{ myself { id } }' })).statusCode, 401);
  });

  test('the key is accepted as ?api_key=, as the raw Authorization header, and GET runs queries', async () => {
    const viaQuery = await t.request(null, 'POST', `/graphql?api_key=${alice.key}`, { query: '{ myself { id } }' });
    assert.deepEqual(json(viaQuery), { data: { myself: { id: alice.accountId } } });
    const raw = await t.request(null, 'POST', '/graphql', { query: '{ myself { id } }' }, { authorization: alice.key });
    assert.equal(json(raw).data.myself.id, alice.accountId);
    const get = await t.request(alice.key, 'GET', `/graphql?query=${encodeURIComponent('{ myself { id } }')}`);
    assert.deepEqual(json(get), { data: { myself: { id: alice.accountId } } });
    const mutation = await t.request(
      alice.key,
      'GET',
      `/graphql?query=${encodeURIComponent('mutation { deleteEndpoint(id: "x") }')}`,
    );
    assert.equal(mutation.statusCode, 200);
    assert.equal(json(mutation).errors[0].extensions.code, 'METHOD_NOT_ALLOWED');
  });

  test('a read-scope key may query but its mutations are refused with FORBIDDEN', async () => {
    assert.equal((await data('{ myself { id } }', undefined, alice.readKey)).myself.id, alice.accountId);
    const refused = await errorOf(pythonCreateEndpoint(workerTemplate), undefined, alice.readKey);
    assert.equal(refused.errors[0]!.extensions.code, 'FORBIDDEN');
    assert.match(refused.errors[0]!.message, /"read" scope; mutations need a "write" key/);
  });

  test('syntax errors, unknown fields and missing queries are HTTP 200 errors with a code', async () => {
    const syntax = await errorOf('{ myself { id }');
    assert.equal(syntax.errors[0]!.extensions.code, 'BAD_REQUEST');
    const unknown = await errorOf('{ myself { id shoeSize } }');
    assert.equal(unknown.errors[0]!.extensions.code, 'VALIDATION_FAILED');
    assert.match(unknown.errors[0]!.message, /shoeSize/);
    const res = await t.request(alice.key, 'POST', '/graphql', { variables: {} });
    assert.equal(res.statusCode, 200);
    assert.match(json(res).errors[0].message, /Send the GraphQL document as "query"/);
  });
});

describe('GraphQL templates, account, catalog and registries', () => {
  test('runpod-python’s saveTemplate creates a template with ports and env in the GraphQL shape', async () => {
    const query = `
    mutation {
        saveTemplate(
            input: {
                name: "py-template", imageName: "runpod/worker:1", dockerArgs: "python -u handler.py", containerDiskInGb: 10, volumeInGb: 0, ports: "8888/http,22/tcp", env: [{ key: "A", value: "1" }, { key: "B", value: "two" }], isServerless: true, containerRegistryAuthId : "", startSsh: true, isPublic: false, readme: ""
            }
        ) {
            id
            name
            imageName
            dockerArgs
            containerDiskInGb
            volumeInGb
            volumeMountPath
            ports
            env {
                key
                value
            }
            isServerless
        }
    }
    `;
    const { saveTemplate } = await data(query);
    assert.deepEqual(
      { ...saveTemplate, id: undefined },
      {
        id: undefined,
        name: 'py-template',
        imageName: 'runpod/worker:1',
        dockerArgs: 'python -u handler.py',
        containerDiskInGb: 10,
        volumeInGb: 0,
        volumeMountPath: null,
        ports: '8888/http,22/tcp',
        env: [
          { key: 'A', value: '1' },
          { key: 'B', value: 'two' },
        ],
        isServerless: true,
      },
    );
    const stored = await t.services.templates.get(alice.accountId, saveTemplate.id);
    assert.deepEqual(stored.ports, ['8888/http', '22/tcp']);
    assert.equal(stored.containerRegistryAuthId, null);
    const changed = await data(
      `mutation saveTemplate($input: SaveTemplateInput) { saveTemplate(input: $input) { id name readme startSsh isPublic containerRegistryAuthId } }`,
      { input: { id: saveTemplate.id, name: 'renamed', readme: '# hi' } },
    );
    assert.deepEqual(changed.saveTemplate, {
      id: saveTemplate.id,
      name: 'renamed',
      readme: '# hi',
      startSsh: true,
      isPublic: false,
      containerRegistryAuthId: null,
    });
  });

  test('updateUserSettings replaces the SSH keys from pubKey lines; myself reads them back', async () => {
    const blob = (n: number) =>
      Buffer.concat([
        Buffer.from([0, 0, 0, 11]),
        Buffer.from('ssh-ed25519'),
        Buffer.from([0, 0, 0, 32]),
        Buffer.alloc(32, n),
      ]).toString('base64');
    const k1 = `ssh-ed25519 ${blob(1)} one@laptop`;
    const k2 = `ssh-ed25519 ${blob(2)} two@laptop`;
    const python = `
    mutation {
        updateUserSettings(
            input: {
                pubKey: "${k1}\\n${k2}"
            }
        ) {
            id
            pubKey
        }
    }
    `;
    assert.deepEqual((await data(python)).updateUserSettings, { id: alice.accountId, pubKey: `${k1}\n${k2}` });
    const ctl = `
		mutation Mutation($input: UpdateUserSettingsInput) {
			updateUserSettings(input: $input) {
			  id
			}
		  }
		`;
    await data(ctl, { input: { pubKey: `${k1}\n\n${k2}\n\n${k1.replace('one', 'three')}` } });
    assert.equal((await t.services.accounts.getSshKeys(alice.accountId)).length, 3);
    const bad = await errorOf(ctl, { input: { pubKey: 'not a key' } });
    assert.equal(bad.errors[0]!.extensions.code, 'VALIDATION_FAILED');
  });

  test('runpod-python’s user query lists the network volumes; serverlessDiscount is null', async () => {
    const query = `
query myself {
    myself {
        id
        pubKey
        networkVolumes {
            id
            name
            size
            dataCenterId
        }
    }
}
`;
    const volume = await t.services.volumes.create(bob.accountId, { name: 'bobs', size: 20, dataCenterId: 'EU-CZ-1' });
    const { myself } = await data(query, undefined, bob.key);
    assert.deepEqual(myself, {
      id: bob.accountId,
      pubKey: '',
      networkVolumes: [{ id: volume.id, name: 'bobs', size: 20, dataCenterId: 'EU-CZ-1' }],
    });
    assert.deepEqual((await data('{ myself { serverlessDiscount { discountFactor type expirationDate } } }')).myself, {
      serverlessDiscount: null,
    });
  });

  test('runpod-python’s gpuTypes queries answer the catalog with prices', async () => {
    const all = await data(`
query GpuTypes {
  gpuTypes {
    id
    displayName
    memoryInGb
  }
}
`);
    assert.equal(all.gpuTypes.length, t.config.catalog.gpuTypes.length);
    const one = await data(`
    query GpuTypes {
      gpuTypes(input: {id: "NVIDIA GeForce RTX 4090"}) {
        maxGpuCount
        id
        displayName
        manufacturer
        memoryInGb
        cudaCores
        secureCloud
        communityCloud
        securePrice
        communityPrice
        oneMonthPrice
        threeMonthPrice
        oneWeekPrice
        communitySpotPrice
        secureSpotPrice
        lowestPrice(input: {gpuCount: 1}) {
          minimumBidPrice
          uninterruptablePrice
        }
      }
    }
    `);
    const g = one.gpuTypes[0];
    assert.equal(g.id, 'NVIDIA GeForce RTX 4090');
    assert.equal(g.memoryInGb, 24);
    assert.equal(g.secureCloud, true);
    assert.equal(g.securePrice, 0.69);
    assert.ok(g.maxGpuCount >= 1);
    // the least bid: the RTX 4090's secure spot price, 40% of its on-demand price by default
    assert.deepEqual(g.lowestPrice, { minimumBidPrice: 0.276, uninterruptablePrice: 0.69 });
    const unknown = await errorOf('{ gpuTypes(input: {id: "TPU"}) { id } }');
    assert.equal(unknown.errors[0]!.extensions.code, 'NOT_FOUND');
  });

  test('registry credentials are saved, updated in place and deleted with the mutations runpod-python sends', async () => {
    const save = `
    mutation SaveRegistryAuth {
        saveRegistryAuth(input: {name: "ghcr", username: "octocat", password: "hunter2-s3cret"}) {
            id
            name
        }
    }
    `;
    const { saveRegistryAuth } = await data(save);
    assert.equal(saveRegistryAuth.name, 'ghcr');
    const update = await data(`
    mutation UpdateRegistryAuth {
        updateRegistryAuth(input: {id: "${saveRegistryAuth.id}", username: "octocat-2", password: "hunter2-s3cret-2"}) {
            id
            name
        }
    }
    `);
    assert.deepEqual(update.updateRegistryAuth, saveRegistryAuth);
    assert.deepEqual(await t.services.registries.credentials(alice.accountId, saveRegistryAuth.id), {
      username: 'octocat-2',
      password: 'hunter2-s3cret-2',
    });
    assert.deepEqual((await data('{ myself { containerRegistryCreds { id name } } }')).myself.containerRegistryCreds, [
      saveRegistryAuth,
    ]);
    const del = await data(`
    mutation DeleteRegistryAuth {
        deleteRegistryAuth(registryAuthId: "${saveRegistryAuth.id}")
    }
    `);
    assert.deepEqual(del, { deleteRegistryAuth: null });
  });

  test('updateRegistryAuth with typed variables, as runpodctl sends it, rotates the password', async () => {
    const { saveRegistryAuth } = await data(
      'mutation { saveRegistryAuth(input: {name: "ecr", username: "AWS", password: "hunter2-s3cret-token-1"}) { id name } }',
    );
    const { updateRegistryAuth } = await data(
      'mutation($input: UpdateRegistryAuthInput!) { updateRegistryAuth(input: $input) { id name } }',
      {
        input: { id: saveRegistryAuth.id, username: 'AWS', password: 'hunter2-s3cret-token-2' },
      },
    );
    assert.deepEqual(updateRegistryAuth, { id: saveRegistryAuth.id, name: 'ecr' });
    assert.deepEqual(await t.services.registries.credentials(alice.accountId, saveRegistryAuth.id), {
      username: 'AWS',
      password: 'hunter2-s3cret-token-2',
    });
  });

  test("updateRegistryAuth of another account's credential answers NOT_FOUND and leaves it unchanged", async () => {
    const { saveRegistryAuth } = await data(
      'mutation { saveRegistryAuth(input: {name: "bobs", username: "bob", password: "hunter2-s3cret-bob"}) { id } }',
      undefined,
      bob.key,
    );
    const res = await errorOf(
      `mutation { updateRegistryAuth(input: {id: "${saveRegistryAuth.id}", username: "mallory", password: "hunter2-s3cret-mallory"}) { id name } }`,
    );
    assert.equal(res.errors[0]!.extensions.code, 'NOT_FOUND');
    assert.deepEqual(await t.services.registries.credentials(bob.accountId, saveRegistryAuth.id), {
      username: 'bob',
      password: 'hunter2-s3cret-bob',
    });
  });

  test('updateRegistryAuth without an id, a username or a password is refused naming the field', async () => {
    const { saveRegistryAuth } = await data(
      'mutation { saveRegistryAuth(input: {name: "partial", username: "u", password: "hunter2-s3cret-p"}) { id } }',
    );
    const noId = await errorOf('mutation { updateRegistryAuth(input: {username: "u", password: "p"}) { id } }');
    assert.equal(noId.errors[0]!.extensions.code, 'VALIDATION_FAILED');
    assert.match(noId.errors[0]!.message, /id: is required/);
    const noSecrets = await errorOf(
      `mutation { updateRegistryAuth(input: {id: "${saveRegistryAuth.id}", username: ""}) { id } }`,
    );
    assert.equal(noSecrets.errors[0]!.extensions.code, 'VALIDATION_FAILED');
    assert.match(noSecrets.errors[0]!.message, /username: is required; password: is required/);
    assert.deepEqual(await t.services.registries.credentials(alice.accountId, saveRegistryAuth.id), {
      username: 'u',
      password: 'hunter2-s3cret-p',
    });
  });

  test('registry passwords never appear in any GraphQL answer, even in errors about bad input', async () => {
    const secret = 'pa55-never-echo-me';
    await gql(
      'mutation { saveRegistryAuth(input: {name: "x", username: "u", password: "' +
        secret +
        '"}) { id name password } }',
    );
    await gql('mutation m($input: SaveRegistryAuthInput) { saveRegistryAuth(input: $input) { id } }', {
      input: { name: 'x', username: 'u', password: secret, colour: 'red' },
    });
    await gql('mutation m($input: SaveRegistryAuthInput) { saveRegistryAuth(input: $input) { id } }', {
      input: { name: 'x', username: 'u', password: [secret] },
    });
    await gql(`mutation { updateRegistryAuth(input: {id: "nope", username: "u", password: "${secret}"}) { id } }`);
    assert.ok(bodies.length > 30);
    for (const body of bodies) {
      assert.ok(!body.includes(secret), `a response leaked the password: ${body}`);
      assert.ok(!body.includes('hunter2-s3cret'), `a response leaked the password: ${body}`);
    }
  });
});

describe('GraphQL pods', () => {
  const POD_FIELDS = `
            id
            containerDiskInGb
            costPerHr
            desiredStatus
            dockerArgs
            dockerId
            env
            gpuCount
            imageName
            lastStatusChange
            machineId
            memoryInGb
            name
            podType
            port
            ports
            uptimeSeconds
            vcpuCount
            volumeInGb
            volumeMountPath
            runtime {
                ports{
                    ip
                    isIpPublic
                    privatePort
                    publicPort
                    type
                }
            }
            machine {
                gpuDisplayName
            }`;

  test('runpod-python’s deploy, pod query, stop and terminate drive a pod; env reads back as K=V strings', async () => {
    const deploy = `
    mutation {
      podFindAndDeployOnDemand(
        input: {
          name: "gql-pod", imageName: "ubuntu:22.04", cloudType: ALL, startSsh: true, gpuTypeId: "NVIDIA GeForce RTX 4090", supportPublicIp: true, gpuCount: 1, dataCenterId: null, containerDiskInGb: 10, ports: "8888/http", env: [{ key: "A", value: "1" }]
        }
      ) {
        id
        imageName
        env
        machineId
        machine {
          podHostId
        }
      }
    }
    `;
    const { podFindAndDeployOnDemand: created } = await data(deploy);
    assert.equal(created.imageName, 'ubuntu:22.04');
    assert.deepEqual(created.env, ['A=1']);
    const { pod } = await data(`
    query pod {
        pod(input: {podId: "${created.id}"}) {${POD_FIELDS}
        }
    }
    `);
    assert.equal(pod.name, 'gql-pod');
    assert.equal(pod.gpuCount, 1);
    assert.equal(pod.ports, '8888/http');
    assert.equal(pod.machine.gpuDisplayName, 'RTX 4090');
    const { myself } = await data(`query myPods { myself { pods {${POD_FIELDS} } } }`);
    assert.ok(myself.pods.some((p: { id: string }) => p.id === created.id));
    assert.equal(
      (await errorOf(`{ pod(input: {podId: "${created.id}"}) { id } }`, undefined, bob.key)).errors[0]!.extensions.code,
      'NOT_FOUND',
    );
    const { podStop } = await data(`mutation { podStop(input: { podId: "${created.id}" }) { id desiredStatus } }`);
    assert.equal(podStop.id, created.id);
    assert.deepEqual(await data(`mutation { podTerminate(input: { podId: "${created.id}" }) }`), {
      podTerminate: null,
    });
  });
});
