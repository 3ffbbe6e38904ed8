/**
 * What dstack's and SkyPilot's RunPod backends send, replayed in the order they send it against a
 * listening server over SQLite and PostgreSQL, each answer checked for what the backend's code reads
 * from it. The GraphQL documents are the backends' own (test/fixtures/graphql-clients/dstack/ and
 * skypilot/, each naming its source and commit on its first line); the REST bodies are built here
 * as the backends build them (the function is named beside each). The runtime is the test-only fake
 * standing in for a Docker engine (runtime kind docker): it records each instance's spec, so the
 * entrypoint override each backend asks for is read back where the container would get it.
 * Their GraphQL pod, volume, cluster and credential lifecycles: test/graphql-dstack.test.ts and
 * test/graphql-skypilot.test.ts; over a real engine and OpenSSH: test/orchestrator-ssh.e2e.test.ts.
 * Here: dstack's offer listing, podEditJob and spot rent; SkyPilot's REST v1 and REST v2 launches.
 */
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from './support/harness.js';
import { startOrchestratorApp, type OrchestratorApp } from './support/orchestrator-app.js';
import { testHost } from './support/docker.js';
import { eventually } from './support/eventually.js';
import { clientDocument } from './fixtures/client-graphql-documents.js';
import { splitArgs } from '../src/runtime/split-args.js';

const GPU = 'NVIDIA GeForce RTX 4090';
const hosts = [
  testHost({
    id: 'ro-1',
    dataCenterId: 'EU-RO-1',
    gpuTypeId: GPU,
    gpuCount: 8,
    cudaVersion: '12.8',
    vcpus: 128,
    memoryGb: 1024,
    diskGb: 4000,
    portRange: [20000, 20999],
  }),
  testHost({
    id: 'ro-2',
    dataCenterId: 'EU-RO-1',
    gpuTypeId: GPU,
    gpuCount: 8,
    cudaVersion: '12.8',
    vcpus: 128,
    memoryGb: 1024,
    diskGb: 4000,
    portRange: [21000, 21999],
  }),
  // dstack rents spot pods in community cloud when its offer's region is a country
  testHost({
    id: 'ro-community',
    dataCenterId: 'EU-RO-1',
    cloud: 'COMMUNITY',
    gpuTypeId: GPU,
    gpuCount: 2,
    cudaVersion: '12.8',
    vcpus: 32,
    memoryGb: 256,
    diskGb: 1000,
    portRange: [23000, 23999],
  }),
  testHost({
    id: 'ro-cpu',
    dataCenterId: 'EU-RO-1',
    cpuFlavors: ['cpu3c'],
    vcpus: 32,
    memoryGb: 128,
    portRange: [22000, 22999],
  }),
];

/** dstack's runner start, as `_get_docker_args` encodes it (the fixture's dockerArgs, decoded). */
const DSTACK_ENTRYPOINT = ['/bin/sh', '-c'];

for (const { name: dialect, skip } of dialects()) {
  describe(`dstack's and SkyPilot's RunPod backends against a server on ${dialect}`, { skip }, () => {
    let o: OrchestratorApp;
    let key: string;

    before(async () => {
      o = await startOrchestratorApp(dialect, { hosts, registryResolver: async () => ['93.184.216.34'] });
      ({ key } = await o.t.newAccount('orchestrators'));
    });
    after(() => o?.close());

    /**
     * Runs a document that must answer without errors (dstack raises on any `errors`), posted as
     * dstack's `_make_request` and runpod-python's `run_graphql_query` post it: JSON with `query`
     * only; gpuhunt's go without a key, as it sends them.
     */
    const data = async (client: string, name: string, ids: Record<string, string> = {}, variables?: any) => {
      const body = await o.gql(name.startsWith('gpuhunt-') ? null : key, clientDocument(client, name, ids), variables);
      assert.equal(body.errors, undefined, `${client}/${name}: ${JSON.stringify(body.errors)}`);
      return body.data;
    };
    /** As SkyPilot's REST calls send: `Content-Type: application/json` on every request, body or not. */
    const rest = (method: string, path: string, body?: unknown) => o.rest(key, method, path, body, { json: 'always' });
    /** The spec the runtime was handed for the pod (a create answers once the start is under way). */
    const specOf = async (podId: string) => {
      const spec = await eventually(`an instance started for pod ${podId}`, async () => o.runtime.specs.get(podId));
      return { entrypoint: spec.entrypoint ?? null, cmd: splitArgs(spec.args) };
    };

    describe('dstack', () => {
      // The GraphQL calls of dstack's pod, volume and cluster lifecycle: test/graphql-dstack.test.ts.
      const ids: Record<string, string> = { GPU_TYPE_ID: GPU, COUNTRY_CODE: 'RO' };

      test("the offer listing (gpuhunt) finds the GPU type in stock in the data center with CPUs and memory, and nothing beyond a host's GPUs", async () => {
        const listing = await data('dstack', 'gpuhunt-gpu-types');
        assert.ok(listing.countryCodes.includes('RO'));
        assert.ok(listing.dataCenters.some((d: any) => d.id === 'EU-RO-1' && d.listed === true));
        const maxGpuCount = Math.max(...listing.gpuTypes.map((g: any) => g.maxGpuCount));
        assert.equal(maxGpuCount, 8);
        const ask = (gpuCount: number, dataCenterId = 'EU-RO-1') => ({
          GpuTypeFilter: { cluster: false },
          lowestPriceInput: {
            secureCloud: true,
            dataCenterId,
            gpuCount,
            minDisk: null,
            minMemoryInGb: null,
            minVcpuCount: null,
            minCudaVersion: '12.8',
          },
        });
        const one = (await data('dstack', 'gpuhunt-pod-types', {}, ask(1))).gpuTypes.find((g: any) => g.id === GPU);
        assert.notEqual(one.lowestPrice.stockStatus, null);
        assert.ok(one.lowestPrice.minVcpu > 0 && one.lowestPrice.minMemory > 0);
        assert.ok(one.securePrice > 0);
        const nine = (await data('dstack', 'gpuhunt-pod-types', {}, ask(9))).gpuTypes.find((g: any) => g.id === GPU);
        assert.equal(nine.lowestPrice.stockStatus, null, 'no host has 9 GPUs: gpuhunt skips the offer');
        const elsewhere = (await data('dstack', 'gpuhunt-pod-types', {}, ask(1, 'US-TX-3'))).gpuTypes.find(
          (g: any) => g.id === GPU,
        );
        assert.equal(elsewhere.lowestPrice.stockStatus, null, 'no host of the type in US-TX-3');
        const clusters = (
          await data(
            'dstack',
            'gpuhunt-pod-types',
            {},
            { gpuTypesInput: { cluster: true }, lowestPriceInput: { gpuCount: 8 } },
          )
        ).gpuTypes.find((g: any) => g.id === GPU);
        assert.deepEqual(
          clusters.nodeGroupDatacenters.map((d: any) => d.id),
          ['EU-RO-1'],
        );
        assert.ok(clusters.clusterPrice > 0 && clusters.lowestPrice.minVcpu > 0 && clusters.lowestPrice.minMemory > 0);
        const cpu = (await data('dstack', 'gpuhunt-cpu-flavors', {}, { dataCenterId: 'EU-RO-1' })).cpuFlavors.find(
          (f: any) => f.id === 'cpu3c',
        );
        assert.notEqual(cpu.specifics.stockStatus, null);
        assert.ok(
          cpu.specifics.securePrice > 0 && cpu.minVcpu >= 1 && cpu.maxVcpu >= cpu.minVcpu && cpu.ramMultiplier > 0,
        );
      });

      test("podEditJob gives a running pod the registry credential dstack made, and a spot pod is rented at dstack's bid", async () => {
        const { saveRegistryAuth } = await data('dstack', 'add-container-registry-auth');
        ids.REGISTRY_AUTH_ID = saveRegistryAuth.id;
        const pod = await rest('POST', '/v2/pods', {
          name: 'dstack-edit',
          image: 'dstackai/base:0.10',
          gpu: { id: GPU },
        });
        assert.equal(pod.status, 201, JSON.stringify(pod.body));
        const { podEditJob } = await data('dstack', 'edit-pod-registry-auth', { ...ids, POD_ID: pod.body.id });
        assert.equal(podEditJob.id, pod.body.id);
        assert.equal((await rest('GET', `/v2/pods/${pod.body.id}`)).body.registry, saveRegistryAuth.id);
        const vol = await rest('POST', '/v2/network-volumes', { name: 'spot-vol', size: 10, dataCenterId: 'EU-RO-1' });
        assert.equal(vol.status, 201, JSON.stringify(vol.body));
        const { podRentInterruptable } = await data('dstack', 'create-pod-spot', { ...ids, VOLUME_ID: vol.body.id });
        const spot = await rest('GET', `/v2/pods/${podRentInterruptable.id}`);
        assert.equal(spot.body.interruptible, true);
        assert.deepEqual((await specOf(podRentInterruptable.id)).entrypoint, DSTACK_ENTRYPOINT);
        for (const id of [pod.body.id, podRentInterruptable.id])
          assert.equal((await rest('DELETE', `/v2/pods/${id}`)).status, 204);
        assert.equal((await rest('DELETE', `/v2/network-volumes/${vol.body.id}`)).status, 204);
      });
    });

    describe('SkyPilot (runpod SDK, GraphQL and REST v1)', () => {
      const ids: Record<string, string> = { GPU_TYPE_ID: GPU, DATA_CENTER_ID: 'EU-RO-1', COUNTRY_CODE: 'RO' };

      test("REST v1's OpenAPI document lists the data centers a create accepts (_rest_launchable_data_center_ids)", async () => {
        const doc = await rest('GET', '/v1/openapi.json');
        assert.equal(doc.status, 200);
        const dataCenterIds = doc.body.components.schemas.PodCreateInput.properties.dataCenterIds.items.enum;
        assert.ok(dataCenterIds.includes('EU-RO-1'));
      });

      test('an on-demand GPU pod over REST v1 runs its dockerEntrypoint and dockerStartCmd, and the pod listing gives its SSH endpoint', async () => {
        // sky/provision/runpod/utils.py _rest_pod_create_params, then _create_pod_via_rest
        const bootstrap = 'echo ZWNobyBoaQ== | base64 --decode > init.sh; bash init.sh';
        const created = await rest('POST', '/v1/pods', {
          name: 'sky-7f3a-5c1e9a2b-head',
          imageName: 'runpod/base:0.0.2',
          containerDiskInGb: 256,
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
          dataCenterIds: ['EU-RO-1'],
        });
        assert.ok(created.status === 200 || created.status === 201, JSON.stringify(created.body));
        const spec = await specOf(created.body.id);
        assert.deepEqual(spec.entrypoint, ['bash', '-c']);
        assert.deepEqual(spec.cmd, [bootstrap]);
        const { myself } = await data('skypilot', 'query-pods');
        const pod = myself.pods.find((p: any) => p.id === created.body.id);
        assert.equal(pod.desiredStatus, 'RUNNING');
        assert.equal(pod.containerRegistryAuthId, null);
        const ssh = pod.runtime.ports.find((p: any) => p.isIpPublic && p.privatePort === 22);
        assert.ok(ssh && typeof ssh.ip === 'string' && Number.isInteger(ssh.publicPort));
        ids.POD_ID = created.body.id;
      });

      test('a spot pod from the SDK-style mutation is rented, listed, and terminated', async () => {
        const { podRentInterruptable } = await data('skypilot', 'create-spot-pod', ids);
        assert.equal(typeof podRentInterruptable.id, 'string');
        assert.ok(Array.isArray(podRentInterruptable.env));
        await data('runpod-python', 'terminate-pod', { POD_ID: podRentInterruptable.id });
      });

      test("a network volume over REST v1 is created, its pods found by networkVolumeId, and deleted with SkyPilot's headers", async () => {
        // sky/provision/runpod/volume.py apply_volume, get_volume_usedby, delete_volume
        const created = await rest('POST', '/v1/networkvolumes', {
          dataCenterId: 'EU-RO-1',
          name: 'sky-vol',
          size: 10,
        });
        assert.ok(created.status === 200 || created.status === 201, JSON.stringify(created.body));
        const listed = await rest('GET', '/v1/networkvolumes');
        assert.ok(listed.body.some((v: any) => v.id === created.body.id && v.name === 'sky-vol'));
        const { myself } = await data('skypilot', 'volume-used-by');
        assert.ok(myself.pods.every((p: any) => 'networkVolumeId' in p));
        assert.ok([200, 204].includes((await rest('DELETE', `/v1/networkvolumes/${created.body.id}`)).status));
      });

      test('terminating through the SDK ends the pod', async () => {
        await data('runpod-python', 'terminate-pod', { POD_ID: ids.POD_ID! });
        const { myself } = await data('skypilot', 'query-pods');
        assert.ok(!myself.pods.some((p: any) => p.id === ids.POD_ID && p.desiredStatus === 'RUNNING'));
      });
    });

    describe("SkyPilot's REST v2 generation", () => {
      test('a GPU pod with per-GPU minimums is created, listed with its vCPUs and SSH endpoint, and torn down with bodiless JSON DELETEs', async () => {
        // sky/provision/runpod/utils.py (REST v2 generation): register_ssh_key, _create_template_for_docker_login, launch, remove
        const keys = await rest('GET', '/v2/account/ssh-keys');
        assert.equal(keys.status, 200);
        const put = await rest('PUT', '/v2/account/ssh-keys', {
          keys: [
            ...(keys.body.keys ?? []),
            'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFNreVBpbG90djJGaXh0dXJlMDAwMDAwMDAwMDAw sky',
          ],
        });
        assert.equal(put.status, 200, JSON.stringify(put.body));
        const registry = await rest('POST', '/v2/registries', {
          name: 'sky-v2-registry-auth',
          username: 'u',
          password: 'p-Secret-1',
        });
        assert.equal(registry.status, 201, JSON.stringify(registry.body));
        const template = await rest('POST', '/v2/templates', {
          name: 'sky-v2-docker-login-template',
          image: 'registry.example.com/team/trainer:1',
          registry: registry.body.id,
          startJupyter: false,
        });
        assert.equal(template.status, 201, JSON.stringify(template.body));
        const gpu = await rest('GET', `/v2/catalog/gpus/${encodeURIComponent(GPU)}`);
        assert.ok(gpu.body.memory > 0);
        const created = await rest('POST', '/v2/pods', {
          name: 'sky-v2-head',
          image: 'registry.example.com/team/trainer:1',
          disk: 50,
          ports: ['22/tcp'],
          args: "bash -c 'echo ZWNobyBoaQ== | base64 --decode > init.sh; bash init.sh'",
          startSsh: true,
          templateId: template.body.id,
          dataCenterIds: ['EU-RO-1'],
          gpu: { id: GPU, count: 1, minVcpuCountPerGpu: 4, minRamPerGpu: gpu.body.memory },
          cloud: 'SECURE',
        });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        // list_instances polls the listing until the pod runs (the start is under way once the create answers)
        const pod = await eventually('the pod listed as RUNNING', async () => {
          const listed = await rest('GET', '/v2/pods');
          const found = (listed.body.pods ?? listed.body).find((p: any) => p.id === created.body.id);
          return found?.status === 'RUNNING' ? found : null;
        });
        assert.ok(pod.gpu.vcpuCount >= 4);
        const ssh = pod.ssh?.direct ?? pod.runtime.ports.find((p: any) => p.private === 22);
        assert.ok(ssh, 'an SSH endpoint');
        assert.equal((await rest('DELETE', `/v2/pods/${created.body.id}`)).status, 204);
        assert.equal((await rest('DELETE', `/v2/templates/${template.body.id}`)).status, 204);
        assert.equal((await rest('DELETE', `/v2/registries/${registry.body.id}`)).status, 204);
      });
    });
  });
}
