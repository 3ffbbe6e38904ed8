/**
 * dstack's RunPod backend against Gantry: every GraphQL document its api_client.py sends
 * (test/fixtures/graphql-clients/dstack/, copied from dstack commit
 * 511c318c8a7672fb2a925041bfc2d7301a26272e with its arguments filled in), sent over HTTP to a
 * listening server on SQLite and on PostgreSQL, and every field its api_client.py and compute.py
 * read checked in the answer — with what the same services show over REST.
 */
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { clientDocument } from './fixtures/client-graphql-documents.js';
import { dialects } from './support/harness.js';
import { RTX_4090, startOrchestratorApp, type OrchestratorApp } from './support/orchestrator-app.js';

const doc = (name: string, ids: Record<string, string> = {}) => clientDocument('dstack', name, ids);
/** DSTACK_RUNNER_SSH_PORT (dstack's core/consts.py): the port its runner's sshd listens on. */
const RUNNER_SSH_PORT = 10022;

for (const { name: dialect, skip } of dialects()) {
  describe(`dstack's RunPod backend on ${dialect}`, { skip }, () => {
    let o: OrchestratorApp;
    let alice: { accountId: string; key: string; readKey: string };
    let bob: { accountId: string; key: string };

    before(async () => {
      o = await startOrchestratorApp(dialect);
      alice = await o.t.newAccount('dstack-alice');
      bob = await o.t.newAccount('dstack-bob');
    });
    after(() => o?.close());

    /** Sends a document as alice and answers its data; dstack raises on any `errors` entry. */
    const data = async (query: string, key = alice.key) => {
      const answer = await o.gql(key, query);
      assert.equal(answer.errors, undefined, JSON.stringify(answer.errors));
      return answer.data;
    };
    /** The first error of a document dstack expects to fail (what its error handling reads). */
    const firstError = async (query: string, key = alice.key) => {
      const answer = await o.gql(key, query);
      assert.ok(answer.errors?.length, `expected an error, got ${JSON.stringify(answer)}`);
      return answer.errors[0]!;
    };

    test('get_user_details answers id, authId and email; authId is the account’s identity, the same for each of its keys', async () => {
      const { myself } = await data(doc('get-user-details'));
      assert.deepEqual(Object.keys(myself).sort(), ['authId', 'email', 'id']);
      assert.equal(myself.id, alice.accountId);
      assert.equal(myself.authId, `gantry|${alice.accountId}`);
      assert.equal(myself.email, null);
      assert.deepEqual((await data(doc('get-user-details'), alice.readKey)).myself, myself);
      assert.notEqual((await data(doc('get-user-details'), bob.key)).myself.authId, myself.authId);
    });

    test('a network volume is created, found with its data center, and deleted; a gone or foreign one answers "Tried to delete nonexistent network volume"', async () => {
      const { createNetworkVolume } = await data(doc('create-network-volume'));
      const id = createNetworkVolume.id as string;
      assert.equal(typeof id, 'string');
      const rest = await o.rest(alice.key, 'GET', `/v2/network-volumes/${id}`);
      assert.deepEqual(rest.body, { id, name: 'dstack-vol-gantry', size: 50, dataCenter: 'US-TX-3', type: 'STANDARD' });
      // get_network_volume: the account's volumes, then the one whose id matches (register_volume reads id and size)
      const { networkVolumes } = (await data(doc('get-network-volumes'))).myself;
      assert.deepEqual(
        networkVolumes.find((v: { id: string }) => v.id === id),
        { id, name: 'dstack-vol-gantry', size: 50, dataCenter: { id: 'US-TX-3', name: 'US-TX-3' } },
      );
      assert.equal((await data(doc('get-network-volumes'), bob.key)).myself.networkVolumes.length, 0);
      // another account cannot delete it, and is told it does not exist
      const foreign = await firstError(doc('delete-network-volume', { VOLUME_ID: id }), bob.key);
      assert.ok(foreign.message.includes('Tried to delete nonexistent network volume'), foreign.message);
      assert.equal((await o.rest(alice.key, 'GET', `/v2/network-volumes/${id}`)).status, 200);
      assert.deepEqual(await data(doc('delete-network-volume', { VOLUME_ID: id })), { deleteNetworkVolume: null });
      assert.equal((await o.rest(alice.key, 'GET', `/v2/network-volumes/${id}`)).status, 404);
      const again = await firstError(doc('delete-network-volume', { VOLUME_ID: id }));
      assert.ok(again.message.includes('Tried to delete nonexistent network volume'), again.message);
      const never = await firstError(doc('delete-network-volume', { VOLUME_ID: 'nosuchvolume' }));
      assert.ok(never.message.includes('Tried to delete nonexistent network volume'), never.message);
    });

    test('a GPU pod made as run_job makes it reads back, once running, every field get_pod selects; its runner port is the last entry of its port', async () => {
      const volumeId = (await data(doc('create-network-volume'))).createNetworkVolume.id as string;
      const authId = (await data(doc('add-container-registry-auth'))).saveRegistryAuth.id as string;
      assert.ok(
        (await data(doc('get-container-registry-auths'))).myself.containerRegistryCreds.some(
          (c: { id: string; name: string }) => c.id === authId && c.name === '0f3c1d2e4b5a69788796a5b4c3d2e1f0',
        ),
      );
      const created = (await data(doc('create-pod', { VOLUME_ID: volumeId, REGISTRY_AUTH_ID: authId })))
        .podFindAndDeployOnDemand;
      assert.deepEqual(Object.keys(created).sort(), ['id', 'imageName', 'lastStatusChange', 'machine']);
      assert.equal(created.imageName, 'dstackai/base:0.10-base-ubuntu22.04');
      assert.equal(created.lastStatusChange, '2026-07-01T10:00:00.000Z');
      assert.equal(typeof created.machine.podHostId, 'string');
      // wait_for_instance polls get_pod until runtime is not null
      await o.t.services.podController.idle(created.id);
      const { pod } = await data(doc('get-pod', { POD_ID: created.id }));
      const rest = (await o.rest(alice.key, 'GET', `/v2/pods/${created.id}`)).body;
      assert.equal(rest.status, 'RUNNING');
      assert.ok(Number.isInteger(pod.uptimeSeconds) && pod.uptimeSeconds >= 0);
      assert.deepEqual(
        { ...pod, runtime: undefined, uptimeSeconds: undefined },
        {
          id: created.id,
          clusterIp: null,
          containerDiskInGb: 100,
          costPerHr: 0.69,
          desiredStatus: 'RUNNING',
          dockerArgs: rest.args,
          dockerId: null,
          env: ['RUNPOD_POD_USER=0'],
          gpuCount: 1,
          imageName: 'dstackai/base:0.10-base-ubuntu22.04',
          lastStatusChange: '2026-07-01T10:00:00.000Z',
          machineId: 'tx-4090-a',
          memoryInGb: rest.memoryInGb,
          name: 'dstack-run-gantry-0-0',
          podType: 'RESERVED',
          port: null,
          ports: '10022/tcp',
          uptimeSeconds: undefined,
          vcpuCount: rest.vcpuCount,
          volumeInGb: 0,
          volumeMountPath: '/volume',
          machine: { gpuDisplayName: 'RTX 4090' },
          runtime: undefined,
        },
      );
      assert.ok(pod.vcpuCount >= 6 && pod.memoryInGb >= 31, 'minVcpuCount and minMemoryInGb were met');
      assert.deepEqual(rest.mounts, { network: [{ volumeId, path: '/volume' }] });
      assert.equal(rest.registry, authId);
      // its dockerArgs is dstack's entrypoint override, taken as pods take it
      assert.deepEqual(o.runtime.specs.get(created.id)?.entrypoint, ['/bin/sh', '-c']);
      // update_provisioning_data: the last runtime port whose privatePort is the runner's gives host and port
      let hostname: string | null = null;
      let sshPort: number | null = null;
      for (const port of pod.runtime.ports)
        if (port.privatePort === RUNNER_SSH_PORT) {
          hostname = port.ip;
          sshPort = port.publicPort;
        }
      const published = rest.runtime.ports.find((p: { private: number }) => p.private === RUNNER_SSH_PORT);
      assert.deepEqual({ hostname, sshPort }, { hostname: '203.0.113.10', sshPort: published.public });
      for (const port of pod.runtime.ports)
        assert.deepEqual(Object.keys(port).sort(), ['ip', 'isIpPublic', 'privatePort', 'publicPort', 'type']);
      // what dstack's cleanup then does: terminate, and the credential goes once nothing uses it
      assert.deepEqual(await data(doc('terminate-pod', { POD_ID: created.id })), { podTerminate: null });
      assert.deepEqual(await data(doc('delete-container-registry-auth', { REGISTRY_AUTH_ID: authId })), {
        deleteRegistryAuth: null,
      });
      assert.deepEqual(await data(doc('delete-network-volume', { VOLUME_ID: volumeId })), {
        deleteNetworkVolume: null,
      });
    });

    test('a CPU pod made with deployCost at its price is placed, its podHostId its SSH proxy username; one whose price is above deployCost is refused as no capacity is', async () => {
      const created = (await data(doc('create-cpu-pod'))).deployCpuPod;
      assert.deepEqual(Object.keys(created).sort(), ['id', 'imageName', 'lastStatusChange', 'machine']);
      const rest = (await o.rest(alice.key, 'GET', `/v2/pods/${created.id}`)).body;
      assert.deepEqual(rest.cpu, { id: 'cpu3c', vcpuCount: 2, memory: 4 });
      assert.equal(rest.cost, 0.06);
      // podHostId: the pod id while the SSH proxy does not listen, its proxy username once it does
      assert.equal(created.machine.podHostId, created.id);
      o.t.config.ssh.listening = true;
      try {
        const proxied = (await data(doc('create-cpu-pod'))).deployCpuPod;
        const { ssh } = (await o.rest(alice.key, 'GET', `/v2/pods/${proxied.id}`)).body;
        assert.equal(proxied.machine.podHostId, ssh.proxy.username);
        assert.notEqual(proxied.machine.podHostId, proxied.id);
        assert.deepEqual(await data(doc('terminate-pod', { POD_ID: proxied.id })), { podTerminate: null });
      } finally {
        o.t.config.ssh.listening = false;
      }
      const cheaper = await o.gql(alice.key, doc('create-cpu-pod').replace('deployCost: 0.06', 'deployCost: 0.05'));
      assert.equal(cheaper.data?.deployCpuPod ?? null, null);
      assert.equal(cheaper.errors?.[0]?.extensions?.code, 'NO_CAPACITY');
      assert.match(cheaper.errors[0].message, /deployCost \$0\.05\/hr: the pod costs \$0\.06\/hr/);
      assert.deepEqual(await data(doc('terminate-pod', { POD_ID: created.id })), { podTerminate: null });
    });

    test('terminating a pod already terminated, never made, or another account’s answers exactly "pod not found to terminate"; REST keeps its answer', async () => {
      const created = (await data(doc('create-cpu-pod'))).deployCpuPod;
      const bobs = (await data(doc('create-cpu-pod'), bob.key)).deployCpuPod;
      const terminate = (podId: string, key = alice.key) => firstError(doc('terminate-pod', { POD_ID: podId }), key);
      assert.equal((await terminate(bobs.id)).message, 'pod not found to terminate');
      assert.notEqual((await o.rest(bob.key, 'GET', `/v2/pods/${bobs.id}`)).body.status, 'TERMINATED');
      assert.deepEqual(await data(doc('terminate-pod', { POD_ID: created.id })), { podTerminate: null });
      assert.equal((await terminate(created.id)).message, 'pod not found to terminate');
      assert.equal((await terminate('nosuchpod')).message, 'pod not found to terminate');
      const rest = await o.rest(alice.key, 'POST', `/v2/pods/${created.id}/action`, { action: 'terminate' });
      assert.equal(rest.status, 409, JSON.stringify(rest.body));
      assert.equal(rest.body.code, 'INVALID_STATE');
      assert.deepEqual(await data(doc('terminate-pod', { POD_ID: bobs.id }), bob.key), { podTerminate: null });
    });

    test('create_cluster makes its pods on one private network, each with its clusterIp; above deployCost it is refused; delete_cluster of a gone cluster answers code "Cluster not found"', async () => {
      const volumeId = (await data(doc('create-network-volume'))).createNetworkVolume.id as string;
      const refused = await o.gql(
        alice.key,
        doc('create-cluster', { VOLUME_ID: volumeId }).replace('deployCost: 2.76', 'deployCost: 2.75'),
      );
      assert.equal(refused.errors?.[0]?.extensions?.code, 'NO_CAPACITY', JSON.stringify(refused));
      assert.match(refused.errors[0].message, /deployCost \$2\.75\/hr: the cluster's 2 pods costs? \$2\.76\/hr/);
      assert.deepEqual((await o.rest(alice.key, 'GET', '/v2/clusters')).body.clusters, []);

      const { createCluster } = await data(doc('create-cluster', { VOLUME_ID: volumeId }));
      assert.deepEqual(Object.keys(createCluster).sort(), ['id', 'name', 'pods']);
      assert.equal(createCluster.name, 'dstack-cluster-gantry-0');
      const members = (await o.rest(alice.key, 'GET', `/v2/clusters/${createCluster.id}/pods`)).body.pods;
      assert.deepEqual(
        createCluster.pods.map((p: { id: string; clusterIp: string }) => [p.id, p.clusterIp]),
        members.map((p: { id: string; cluster: { ip: string } }) => [p.id, p.cluster.ip]),
      );
      const cidr = (await o.rest(alice.key, 'GET', `/v2/clusters/${createCluster.id}`)).body.network.cidr as string;
      for (const [rank, pod] of (createCluster.pods as Array<Record<string, any>>).entries()) {
        assert.deepEqual(Object.keys(pod).sort(), ['clusterIp', 'id', 'imageName', 'lastStatusChange', 'machine']);
        assert.equal(pod.clusterIp, cidr.replace(/0\/24$/, String(2 + rank)));
        assert.equal(pod.imageName, 'dstackai/base:0.10-base-ubuntu22.04');
        assert.equal(pod.lastStatusChange, '2026-07-01T10:00:00.000Z');
        assert.equal(typeof pod.machine.podHostId, 'string');
      }
      for (const member of members) {
        await o.t.services.podController.idle(member.id);
        assert.deepEqual(o.runtime.specs.get(member.id)?.entrypoint, ['/bin/sh', '-c'], 'dockerArgs as a pod’s');
        assert.deepEqual([member.gpu.id, member.gpu.count], [RTX_4090, 2]);
        assert.equal(member.dataCenterId, 'US-TX-3');
        assert.deepEqual(member.mounts, { network: [{ volumeId, path: '/volume' }] });
        assert.deepEqual(member.ports, ['10022/tcp']);
        assert.equal(member.env.RUNPOD_POD_USER, '0');
        assert.equal(member.disk, 100);
      }
      // get_pod on a member: clusterIp is its address on the cluster's network
      const { pod } = await data(doc('get-pod', { POD_ID: members[1].id }));
      assert.equal(pod.clusterIp, members[1].cluster.ip);

      const foreign = await firstError(doc('delete-cluster', { CLUSTER_ID: createCluster.id }), bob.key);
      assert.equal((foreign as { extensions?: { code?: string } }).extensions?.code, 'Cluster not found');
      assert.deepEqual(await data(doc('delete-cluster', { CLUSTER_ID: createCluster.id })), { deleteCluster: true });
      for (const member of members)
        assert.equal((await o.rest(alice.key, 'GET', `/v2/pods/${member.id}`)).body.status, 'TERMINATED');
      const gone = await firstError(doc('delete-cluster', { CLUSTER_ID: createCluster.id }));
      assert.equal((gone as { extensions?: { code?: string } }).extensions?.code, 'Cluster not found');
      assert.deepEqual(await data(doc('delete-network-volume', { VOLUME_ID: volumeId })), {
        deleteNetworkVolume: null,
      });
    });
  });
}
