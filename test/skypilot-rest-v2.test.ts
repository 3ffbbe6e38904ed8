/**
 * SkyPilot's REST v2 generation of its RunPod backend against Gantry, on both stores: the exact
 * requests it sends, read from pull request #10846 "Migrate to REST API v2" (skypilot-org/skypilot,
 * its branch as the search index stores it: `sky/adaptors/runpod.py`, file id 69810251555, and
 * `sky/provision/runpod/utils.py`, file id 69769684113; the branch's history cannot be fetched
 * here). Its adaptor sends `Content-Type: application/json` on every call through python-requests,
 * which adds `Content-Length: 0` to a DELETE without a body; its launch asks for per-GPU minimums
 * inside `gpu` and its instance list reads `gpu.vcpuCount`.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';
import { createTestApp, dialects, json, type DialectName, type TestApp } from './support/harness.js';

const GPU = 'NVIDIA GeForce RTX 4090';

// One GPU type (it comes with 6 vCPUs and 48 GB per GPU) on three hosts whose share per GPU differs:
// tx: 2 vCPUs and 128 GB a GPU; ca: 16 vCPUs and 16 GB; ro: 8 vCPUs and 48 GB.
const fleet = [
  { id: 'tx', dataCenterId: 'US-TX-3', gpuTypeId: GPU, gpuCount: 4, cudaVersion: '12.4', vcpus: 8, memoryGb: 512 },
  { id: 'ca', dataCenterId: 'US-CA-2', gpuTypeId: GPU, gpuCount: 4, cudaVersion: '12.4', vcpus: 64, memoryGb: 64 },
  { id: 'ro', dataCenterId: 'EU-RO-1', gpuTypeId: GPU, gpuCount: 4, cudaVersion: '12.8', vcpus: 32, memoryGb: 192 },
].map((h, i) => ({ ...h, portRange: [20000 + i * 1000, 20999 + i * 1000] }));

/** What `rest_request` sends: the key, and JSON content type on every method (python-requests). */
const skyHeaders = (key: string, body: string | null): Record<string, string> => ({
  authorization: `Bearer ${key}`,
  'content-type': 'application/json',
  // python-requests: a JSON body's length, and `Content-Length: 0` on a DELETE or POST without one
  'content-length': String(body === null ? 0 : Buffer.byteLength(body)),
  'user-agent': 'python-requests/2.32.3',
});

const skyRequest = (t: TestApp, key: string, method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) => {
  const payload = body === undefined ? null : JSON.stringify(body);
  const headers = skyHeaders(key, payload);
  if (method === 'GET') delete headers['content-length']; // python-requests sends none on a GET
  return t.app.inject({ method, url: `/v2${path}`, headers, ...(payload !== null ? { payload } : {}) });
};

/** `launch()` of utils.py for instance type `2x_RTX4090_SECURE`, zone list `zones`, head node of cluster `c`. */
const launchBody = (gpuMemoryGb: number, zones: string[]) => ({
  name: 'c-head',
  image: 'runpod/base:1.0.2-ubuntu2204',
  disk: 50,
  ports: ['22/tcp', '8265/http', '6380/http'],
  args: "bash -c 'echo cHJlZml4X2NtZCgpIHsgOjsgfQ== | base64 --decode > init.sh; bash init.sh'",
  startSsh: true,
  dataCenterIds: zones,
  gpu: { id: GPU, count: 2, minVcpuCountPerGpu: 4, minRamPerGpu: gpuMemoryGb },
  cloud: 'SECURE',
});

for (const { name, skip } of dialects()) describe(`SkyPilot's REST v2 client (${name})`, { skip }, () => suite(name));

function suite(dialect: DialectName): void {
  const withApp = async (body: (t: TestApp, key: string) => Promise<void>): Promise<void> => {
    const t = await createTestApp({ dialect, runtime: new FakeRuntime(), file: { fleet } });
    try {
      await body(t, (await t.newAccount()).key);
    } finally {
      await t.close();
    }
  };

  test('a launch with per-GPU minimums is placed only on a host whose share per GPU meets them, and its gpu answers vcpuCount and memory', () =>
    withApp(async (t, key) => {
      // _get_gpu_memory_gb: the GPU type's memory becomes minRamPerGpu
      const spec = await skyRequest(t, key, 'GET', `/catalog/gpus/${encodeURIComponent(GPU)}`);
      assert.equal(spec.statusCode, 200, spec.body);
      const memory = json<{ memory: number }>(spec).memory;
      assert.equal(memory, 24);

      const fewCpus = await skyRequest(t, key, 'POST', '/pods', launchBody(memory, ['US-TX-3']));
      assert.equal(fewCpus.statusCode, 400, fewCpus.body);
      assert.equal(json(fewCpus).code, 'NO_CAPACITY');
      assert.match(json(fewCpus).detail, /the 8 vCPUs asked for: CPUs are the constraint/);
      const littleRam = await skyRequest(t, key, 'POST', '/pods', launchBody(memory, ['US-CA-2']));
      assert.equal(littleRam.statusCode, 400, littleRam.body);
      assert.match(json(littleRam).detail, /the 48 GB of memory asked for: memory is the constraint/);

      const res = await skyRequest(t, key, 'POST', '/pods', launchBody(memory, ['US-TX-3', 'US-CA-2', 'EU-RO-1']));
      assert.equal(res.statusCode, 201, res.body);
      const pod = json(res);
      assert.equal(pod.dataCenterId, 'EU-RO-1', 'the one host whose share per GPU meets both minimums');
      // two GPUs come with 2 × 6 vCPUs (at least 2 × 4 asked) and 2 × 48 GB (at least 2 × 24)
      assert.deepEqual(pod.gpu, { id: GPU, count: 2, vcpuCount: 12, memory: 96 });

      // list_instances → _parse_pod: `(pod.get('gpu') or pod.get('cpu'))['vcpuCount']`
      const list = json(await skyRequest(t, key, 'GET', '/pods'));
      assert.equal(list.pods.length, 1);
      assert.equal((list.pods[0].gpu ?? list.pods[0].cpu).vcpuCount, 12);
    }));

  test('a DELETE with Content-Type application/json and no body tears the pod down (remove(), delete_pod_template())', () =>
    withApp(async (t, key) => {
      const created = await skyRequest(t, key, 'POST', '/pods', launchBody(24, []));
      assert.equal(created.statusCode, 201, created.body);
      const template = await skyRequest(t, key, 'POST', '/templates', {
        name: 'c-docker-login-template',
        image: 'runpod/base:1.0.2-ubuntu2204',
        startJupyter: false,
      });
      assert.equal(template.statusCode, 201, template.body);

      const removed = await skyRequest(t, key, 'DELETE', `/pods/${encodeURIComponent(json(created).id)}`);
      assert.equal(removed.statusCode, 204, removed.body);
      const gone = await skyRequest(t, key, 'DELETE', `/templates/${encodeURIComponent(json(template).id)}`);
      assert.ok(gone.statusCode >= 200 && gone.statusCode < 300, gone.body);
      assert.equal(json(await skyRequest(t, key, 'GET', `/pods/${json(created).id}`)).status, 'TERMINATED');
    }));
}
