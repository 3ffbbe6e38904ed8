/**
 * SkyPilot's RunPod backend against Gantry: the GraphQL documents its provisioner sends itself
 * (test/fixtures/graphql-clients/skypilot/: sky/provision/runpod/utils.py as the code index stores
 * SkyPilot's default branch, whose history cannot be fetched here, and volume.py at commit
 * 270d0ca92332c61dcf83e8c2f32cab84811bc442) and through the runpod SDK (runpod-python 07fc6e2b),
 * sent over HTTP to a listening server on SQLite and on PostgreSQL, with every field the
 * provisioner reads checked the way it reads it.
 */
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { clientDocument } from './fixtures/client-graphql-documents.js';
import { dialects } from './support/harness.js';
import { A40, startOrchestratorApp, type OrchestratorApp } from './support/orchestrator-app.js';

const sky = (name: string, ids: Record<string, string> = {}) => clientDocument('skypilot', name, ids);
const py = (name: string, ids: Record<string, string> = {}) => clientDocument('runpod-python', name, ids);
const CLUSTER = 'sky-gantry-2ea4';

interface PodRow {
  id: string;
  name: string;
  desiredStatus: string;
  vcpuCount: number | null;
  containerRegistryAuthId: string | null;
  runtime: { ports: Array<{ ip: string | null; isIpPublic: boolean; privatePort: number; publicPort: number }> } | null;
}

/** utils.py list_instances: what the provisioner makes of each pod of `_QUERY_POD`. */
function listInstances(pods: PodRow[]) {
  const instances: Record<string, Record<string, unknown>> = {};
  for (const pod of pods) {
    const info: Record<string, unknown> = { status: pod.desiredStatus, name: pod.name, vcpu_count: pod.vcpuCount };
    const port2endpoint: Record<number, { host: string | null; port: number }> = {};
    if (pod.desiredStatus === 'RUNNING' && pod.runtime?.ports?.length)
      for (const port of pod.runtime.ports)
        if (port.isIpPublic) {
          if (port.privatePort === 22) {
            info.external_ip = port.ip;
            info.ssh_port = port.publicPort;
          }
          port2endpoint[port.privatePort] = { host: port.ip, port: port.publicPort };
        } else info.internal_ip = port.ip;
    instances[pod.id] = { ...info, port2endpoint };
  }
  return instances;
}

for (const { name: dialect, skip } of dialects()) {
  describe(`SkyPilot's RunPod backend on ${dialect}`, { skip }, () => {
    let o: OrchestratorApp;
    let alice: { accountId: string; key: string };
    let bob: { accountId: string; key: string };

    before(async () => {
      o = await startOrchestratorApp(dialect);
      alice = await o.t.newAccount('sky-alice');
      bob = await o.t.newAccount('sky-bob');
    });
    after(() => o?.close());

    const data = async (query: string, key = alice.key) => {
      const answer = await o.gql(key, query);
      assert.equal(answer.errors, undefined, JSON.stringify(answer.errors));
      return answer.data;
    };

    test('a docker-login cluster: its credential and template made, a pod launched from them and read as list_instances reads it; teardown deletes the template by name, then the credential, leaving neither', async () => {
      const authId = (await data(sky('create-registry-auth'))).saveRegistryAuth.id as string;
      const template = (await data(sky('create-docker-login-template', { REGISTRY_AUTH_ID: authId }))).saveTemplate;
      assert.equal(template.name, `${CLUSTER}-docker-login-template`);
      const launched = (await data(sky('launch-cpu-pod', { TEMPLATE_ID: template.id }))).deployCpuPod;
      await o.t.services.podController.idle(launched.id);
      const rest = (await o.rest(alice.key, 'GET', `/v2/pods/${launched.id}`)).body;
      assert.equal(rest.status, 'RUNNING');
      assert.equal(rest.registry, authId, 'the pod pulls with the template’s credential');
      assert.equal(rest.image, 'registry.gantry.test/team/app:1.0');

      // list_instances / get_cluster_info / query_ports over _QUERY_POD
      const pods: PodRow[] = (await data(sky('query-pods'))).myself.pods;
      const row = pods.find((p) => p.id === launched.id)!;
      assert.equal(row.containerRegistryAuthId, authId);
      const ssh = rest.runtime.ports.find((p: { private: number }) => p.private === 22);
      assert.deepEqual(listInstances(pods)[launched.id], {
        status: 'RUNNING',
        name: `${CLUSTER}-head`,
        vcpu_count: 2,
        external_ip: '203.0.113.12',
        ssh_port: ssh.public,
        internal_ip: '203.0.113.12',
        port2endpoint: { 22: { host: '203.0.113.12', port: ssh.public } },
      });

      // terminate_instances: find the template and its credential by the cluster's name
      const templates = (await data(sky('query-pod-templates'))).myself.podTemplates as Array<Record<string, string>>;
      const named = templates.find((t) => t.name === `${CLUSTER}-docker-login-template`)!;
      assert.deepEqual(named, { name: `${CLUSTER}-docker-login-template`, containerRegistryAuthId: authId });
      assert.deepEqual(await data(py('terminate-pod', { POD_ID: launched.id })), { podTerminate: null });
      assert.deepEqual(await data(sky('delete-pod-template', { TEMPLATE_NAME: named.name })), { deleteTemplate: null });
      assert.deepEqual(await data(py('delete-registry-auth', { REGISTRY_AUTH_ID: authId })), {
        deleteRegistryAuth: null,
      });
      assert.equal((await o.rest(alice.key, 'GET', `/v2/templates/${template.id}`)).status, 404);
      assert.equal((await o.rest(alice.key, 'GET', `/v2/registries/${authId}`)).status, 404);
      assert.deepEqual((await data(sky('query-pod-templates'))).myself.podTemplates, []);
    });

    test('deleteTemplate deletes only the caller’s template of that name: none is NOT_FOUND, another account’s is untouched, a shared name is refused naming both', async () => {
      const save = (key: string) =>
        o.rest(key, 'POST', '/v2/templates', { name: 'shared-name', image: 'ubuntu:22.04' });
      const bobs = (await save(bob.key)).body.id as string;
      const missing = await o.gql(alice.key, sky('delete-pod-template', { TEMPLATE_NAME: 'shared-name' }));
      assert.equal(missing.errors?.[0]?.extensions?.code, 'NOT_FOUND');
      assert.equal(missing.errors?.[0]?.message, 'No template named "shared-name" exists for this account.');
      assert.equal((await o.rest(bob.key, 'GET', `/v2/templates/${bobs}`)).status, 200);
      const first = (await save(alice.key)).body.id as string;
      const second = (await save(alice.key)).body.id as string;
      const ambiguous = await o.gql(alice.key, sky('delete-pod-template', { TEMPLATE_NAME: 'shared-name' }));
      assert.equal(ambiguous.errors?.[0]?.extensions?.code, 'BAD_REQUEST');
      for (const id of [first, second])
        assert.ok(ambiguous.errors[0].message.includes(`"${id}"`), ambiguous.errors[0].message);
      assert.equal((await o.rest(alice.key, 'DELETE', `/v2/templates/${second}`)).status, 204);
      assert.deepEqual(await data(sky('delete-pod-template', { TEMPLATE_NAME: 'shared-name' })), {
        deleteTemplate: null,
      });
      assert.equal((await o.rest(alice.key, 'GET', `/v2/templates/${first}`)).status, 404);
      assert.equal((await o.rest(bob.key, 'GET', `/v2/templates/${bobs}`)).status, 200);
    });

    test('gpuAvailability(input: {gpuCount, secureCloud}) answers per data center whether a pod of that many GPUs fits on one host in that cloud now, as the capacity pre-check reads it', async () => {
      /** utils.py _available_data_center_ids: the data centers with the type available. */
      const availableFor = async (gpuCount: number, secure: boolean) => {
        const query = sky('gpu-availability').replace(
          '{gpuCount: 2, secureCloud: true}',
          `{gpuCount: ${gpuCount}, secureCloud: ${String(secure)}}`,
        );
        const { dataCenters } = await data(query);
        for (const dc of dataCenters)
          for (const entry of dc.gpuAvailability ?? [])
            assert.deepEqual(Object.keys(entry).sort(), ['available', 'gpuTypeId']);
        return (dataCenters as Array<{ id: string; gpuAvailability: Array<{ gpuTypeId: string; available: boolean }> }>)
          .filter((dc) => dc.gpuAvailability.some((e) => e.gpuTypeId === A40 && e.available))
          .map((dc) => dc.id)
          .sort();
      };
      assert.deepEqual(await availableFor(2, true), ['US-TX-3'], 'EU-RO-1 has one A40 a host; US-CA-2 is community');
      assert.deepEqual(await availableFor(1, true), ['EU-RO-1', 'US-TX-3']);
      assert.deepEqual(await availableFor(2, false), ['US-CA-2']);
      assert.deepEqual(await availableFor(5, true), [], 'no host has five');
      const taken = await o.rest(alice.key, 'POST', '/v2/pods', {
        name: 'three-a40',
        image: 'ubuntu:22.04',
        gpu: { id: A40, count: 3 },
        dataCenterIds: ['US-TX-3'],
      });
      assert.equal(taken.status, 201, JSON.stringify(taken.body));
      assert.deepEqual(await availableFor(2, true), [], 'one A40 is left in US-TX-3');
      assert.deepEqual(await availableFor(1, true), ['EU-RO-1', 'US-TX-3']);
      assert.equal((await o.rest(alice.key, 'DELETE', `/v2/pods/${taken.body.id}`)).status, 204);
      assert.deepEqual(await availableFor(2, true), ['US-TX-3']);
    });

    test('the volume usage query names the network volume each pod mounts, and null for a pod without one', async () => {
      const volume = await o.rest(alice.key, 'POST', '/v2/network-volumes', {
        name: `${CLUSTER}-vol`,
        size: 20,
        dataCenter: 'US-TX-3',
      });
      assert.equal(volume.status, 201);
      const create = (name: string, mounts?: unknown) =>
        o.rest(alice.key, 'POST', '/v2/pods', {
          name,
          image: 'ubuntu:22.04',
          cpu: { id: 'cpu3c', vcpuCount: 2 },
          ...(mounts ? { mounts } : {}),
        });
      const mounting = (await create('uses-vol', { network: [{ volumeId: volume.body.id, path: '/data' }] })).body;
      const plain = (await create('no-vol')).body;
      const pods = (await data(sky('volume-used-by'))).myself.pods as Array<Record<string, string | null>>;
      assert.deepEqual(
        pods.filter((p) => p.id === mounting.id || p.id === plain.id).sort((a, b) => a.name!.localeCompare(b.name!)),
        [
          { id: plain.id, name: 'no-vol', networkVolumeId: null },
          { id: mounting.id, name: 'uses-vol', networkVolumeId: volume.body.id },
        ],
      );
      const usedBy = pods.filter((p) => p.networkVolumeId === volume.body.id).map((p) => p.name);
      assert.deepEqual(usedBy, ['uses-vol']);
      assert.deepEqual((await data(sky('volume-used-by'), bob.key)).myself.pods, []);
    });
  });
}
