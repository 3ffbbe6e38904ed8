/**
 * CPU serverless endpoints and data-center locations, driven by runpodctl's own request on both
 * stores: `runpodctl serverless create --template-id <id> --compute-type CPU --instance-id
 * cpu3g-4-16 --data-center-ids US-TX-3` (runpod/runpodctl 2e2df89e, cmd/serverless/create.go and
 * internal/api/endpoints.go `CreateEndpointGQL`) sends GraphQL `saveEndpoint` with `instanceIds`
 * and the data-center ids in `locations`. The workers the autoscaler launches run on the flavor's
 * hosts with its vCPUs (RUNPOD_CPU_COUNT) and memory, are billed per vCPU as CPU pods are, count in
 * `/health`, and idle out as GPU workers do. The in-memory runtime stands for the engine.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../src/domain/clock.js';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';
import { createTestApp, dialects, json, type DialectName, type TestApp } from './support/harness.js';

/** runpodctl's `CreateEndpointGQL` document, as sent. */
const CREATE_ENDPOINT_GQL = `
		mutation SaveEndpoint($input: EndpointInput!) {
			saveEndpoint(input: $input) {
				id
				name
				templateId
				gpuIds
				instanceIds
				computeType
				networkVolumeId
				networkVolumeIds {
					networkVolumeId
					dataCenterId
				}
				locations
				idleTimeout
				scalerType
				scalerValue
				workersMin
				workersMax
				gpuCount
				minCudaVersion
				executionTimeoutMs
				flashBootType
				modelReferences
			}
		}
	`;

const GPU = 'NVIDIA GeForce RTX 4090';
// cpu3g comes in Texas and Romania (the endpoint names Texas); the GPU host serves GPU workers.
const fleet = [
  { id: 'tx-cpu', dataCenterId: 'US-TX-3', cpuFlavors: ['cpu3c', 'cpu3g'], vcpus: 64, memoryGb: 256 },
  { id: 'ro-cpu', dataCenterId: 'EU-RO-1', cpuFlavors: ['cpu3g'], vcpus: 64, memoryGb: 256 },
  { id: 'ca-gpu', dataCenterId: 'US-CA-2', gpuTypeId: GPU, gpuCount: 4, cudaVersion: '12.4', vcpus: 32, memoryGb: 256 },
  { id: 'tx-gpu', dataCenterId: 'US-TX-3', gpuTypeId: GPU, gpuCount: 4, cudaVersion: '12.4', vcpus: 32, memoryGb: 256 },
].map((h, i) => ({ ...h, portRange: [20000 + i * 1000, 20999 + i * 1000] }));

for (const { name, skip } of dialects()) describe(`CPU endpoints and locations (${name})`, { skip }, () => suite(name));

function suite(dialect: DialectName): void {
  const withApp = async (
    body: (t: TestApp, a: { accountId: string; key: string }, runtime: FakeRuntime, clock: FakeClock) => Promise<void>,
  ) => {
    const clock = new FakeClock(Date.parse('2026-07-01T10:00:00Z'));
    const runtime = new FakeRuntime();
    const t = await createTestApp({ dialect, clock, runtime, file: { fleet } });
    await t.services.autoscaler.start({ loop: false });
    try {
      await body(t, await t.newAccount(), runtime, clock);
    } finally {
      await t.services.autoscaler.stop();
      await t.close();
    }
  };
  const serverlessTemplate = async (t: TestApp, key: string): Promise<string> => {
    const res = await t.request(key, 'POST', '/v2/templates', {
      name: `w-${Date.now()}`,
      image: 'fake/idle',
      serverless: true,
    });
    assert.equal(res.statusCode, 201, res.body);
    return json(res).id;
  };
  const saveEndpoint = async (t: TestApp, key: string, input: Record<string, unknown>) => {
    const res = await t.request(key, 'POST', '/graphql', { query: CREATE_ENDPOINT_GQL, variables: { input } });
    assert.equal(res.statusCode, 200, res.body);
    return json<{ data: { saveEndpoint: Record<string, unknown> } | null; errors?: Array<{ message: string }> }>(res);
  };
  const workersOf = (t: TestApp, endpointId: string) => t.services.autoscaler.workerIds(endpointId);
  /** A worker's call to a URL it was given, with the key it was given (the runpod SDK sends it bare). */
  const workerCall = (t: TestApp, env: Record<string, string>, method: 'GET' | 'POST', url: string, body?: unknown) =>
    t.app.inject({
      method,
      url: url.replace(/^https?:\/\/[^/]+/, ''),
      headers: { authorization: env.RUNPOD_AI_API_KEY!, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { payload: JSON.stringify(body) } : {}),
    });
  /** Autoscaler passes, 5 s of the clock apart, until the endpoint has `n` workers (or ten passes went by). */
  const scaleTo = async (t: TestApp, clock: FakeClock, endpointId: string, n: number) => {
    for (let i = 0; i < 10 && workersOf(t, endpointId).length < n; i++) {
      await t.services.autoscaler.tick(clock.now());
      clock.advance(5_000);
    }
    return workersOf(t, endpointId);
  };

  test("runpodctl's CPU create makes a CPU endpoint whose workers run on the flavor in its data center, with RUNPOD_CPU_COUNT, billed per vCPU, in /health, idling out", () =>
    withApp(async (t, a, runtime, clock) => {
      const templateId = await serverlessTemplate(t, a.key);
      // the variables as Go marshals EndpointCreateGQLInput (omitempty: workersMin 0 and gpuCount are left out)
      const answer = await saveEndpoint(t, a.key, {
        name: 'cpu-echo',
        templateId,
        instanceIds: ['cpu3g-4-16'],
        workersMax: 3,
        locations: 'US-TX-3',
        flashBootType: 'FLASHBOOT',
      });
      assert.equal(answer.errors, undefined, JSON.stringify(answer.errors));
      const ep = answer.data!.saveEndpoint;
      assert.deepEqual(
        [ep.computeType, ep.instanceIds, ep.gpuIds, ep.locations],
        ['CPU', ['cpu3g-4-16'], '', 'US-TX-3'],
      );
      const id = String(ep.id);

      const run = await t.request(a.key, 'POST', `/v2/${id}/run`, { input: { n: 1 } });
      assert.equal(run.statusCode, 200, run.body);
      await t.services.autoscaler.tick(clock.now());
      const [workerId] = workersOf(t, id);
      assert.ok(workerId, 'a worker was launched for the queued job');
      const spec = runtime.specs.get(workerId)!;
      assert.equal(spec.hostId, 'tx-cpu', 'the flavor in the data center runpodctl named, not Romania');
      assert.deepEqual([spec.vcpus, spec.memoryGb, spec.gpuIndices], [4, 16, []]);
      assert.equal(spec.platformEnv.RUNPOD_CPU_COUNT, '4');
      assert.equal(spec.platformEnv.RUNPOD_GPU_COUNT, '0');
      assert.equal(spec.platformEnv.RUNPOD_DC_ID, 'US-TX-3');

      // launched, it counts in /health; once it takes the job over the worker protocol with the
      // URL and key it was given (as the runpod SDK does), it counts as running
      const before = json(await t.request(a.key, 'GET', `/v2/${id}/health`));
      assert.equal(before.workers.initializing, 1, JSON.stringify(before));
      const take = spec.platformEnv.RUNPOD_WEBHOOK_GET_JOB!.replace('$ID', workerId);
      assert.match(take, /gpu=CPU/);
      const taken = await workerCall(t, spec.platformEnv, 'GET', take);
      assert.equal(taken.statusCode, 200, taken.body);
      const health = json(await t.request(a.key, 'GET', `/v2/${id}/health`));
      assert.equal(health.workers.running, 1, JSON.stringify(health));
      assert.deepEqual(health.jobs.inProgress, 1);

      // billed per vCPU at the flavor's price in the cloud it landed in, as a CPU pod is
      const flavor = t.config.catalog.cpuFlavors.find((f) => f.id === 'cpu3g')!;
      clock.advance(36_000);
      await t.services.workers.markDead(id, [workerId], clock.now());
      clock.advance(3_600_000);
      const bill = json(await t.request(a.key, 'GET', `/v2/billing/serverless?lastN=1&serverlessId=${id}`));
      assert.equal(bill.metadata.totals.gpuAmount, 0);
      assert.ok(
        Math.abs(bill.metadata.totals.cpuAmount - (36 * 4 * flavor.securePricePerVcpu) / 3600) < 1e-6,
        JSON.stringify(bill.metadata.totals),
      );
    }));

  test('a CPU endpoint scales like a GPU one (runpodctl --scale-by requests --scale-threshold 1): one worker per queued job up to workersMax, none left once idle', () =>
    withApp(async (t, a, runtime, clock) => {
      const templateId = await serverlessTemplate(t, a.key);
      const ep = (
        await saveEndpoint(t, a.key, {
          name: 'cpu-scale',
          templateId,
          instanceIds: ['cpu3c-2-4'],
          workersMax: 2,
          idleTimeout: 5,
          scalerType: 'REQUEST_COUNT',
          scalerValue: 1,
        })
      ).data!.saveEndpoint;
      const id = String(ep.id);
      for (let i = 0; i < 3; i++) await t.request(a.key, 'POST', `/v2/${id}/run`, { input: { i } });
      const workers = await scaleTo(t, clock, id, 3);
      assert.equal(workers.length, 2, 'workersMax caps the launch');
      // each takes a job and posts its result over the worker protocol, as the runpod SDK does
      for (const w of workers) {
        const env = runtime.specs.get(w)!.platformEnv;
        assert.equal(env.RUNPOD_CPU_COUNT, '2');
        const job = json(await workerCall(t, env, 'GET', env.RUNPOD_WEBHOOK_GET_JOB!.replace('$ID', w)));
        const done = env.RUNPOD_WEBHOOK_POST_OUTPUT!.replace('$RUNPOD_POD_ID', w).replace('$ID', job.id);
        assert.equal((await workerCall(t, env, 'POST', done, { output: { ok: true } })).statusCode, 200);
      }
      await t.services.jobs.client.purgeQueue(id);
      for (let i = 0; i < 3; i++) {
        clock.advance(6_000);
        await t.services.autoscaler.tick(clock.now());
      }
      assert.deepEqual(workersOf(t, id), [], 'idle workers are stopped after idleTimeout');
      for (const w of workers) assert.ok(runtime.stopped.includes(w) || runtime.removed.includes(w), w);
    }));

  test("the same CPU endpoint over REST v2 (`cpu`) and REST v1 (`computeType: CPU`, `cpuFlavorIds`, `vcpuCount`), as upstream's documents name them", () =>
    withApp(async (t, a, runtime, clock) => {
      const templateId = await serverlessTemplate(t, a.key);
      // runpod/docs a900806e api-reference-v2/openapi.json CreateEndpointRequest: `cpu` replaces `gpu`
      const v2 = await t.request(a.key, 'POST', '/v2/serverless', {
        name: 'cpu-v2',
        type: 'QUEUE',
        templateId,
        cpu: [{ id: 'cpu3g', vcpuCount: 4 }],
        scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
        dataCenterIds: ['US-TX-3'],
      });
      assert.equal(v2.statusCode, 201, v2.body);
      assert.deepEqual([json(v2).gpu, json(v2).cpu], [null, [{ id: 'cpu3g', vcpuCount: 4, memory: 16 }]]);
      const v1 = json(await t.request(a.key, 'GET', `/v1/endpoints/${json(v2).id}`));
      assert.deepEqual([v1.computeType, v1.instanceIds, v1.gpuTypeIds], ['CPU', ['cpu3g-4-16'], []]);
      const bad = await t.request(a.key, 'POST', '/v2/serverless', {
        name: 'cpu-bad',
        type: 'QUEUE',
        templateId,
        cpu: [{ id: 'cpu3g', vcpuCount: 3 }],
        scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
      });
      assert.equal(bad.statusCode, 422, bad.body);
      assert.match(json(bad).detail, /cpu: "cpu3g-3-12" is not a size of CPU flavor cpu3g/);

      // runpod/docs a900806e api-reference/openapi.json EndpointCreateInput
      const created = await t.request(a.key, 'POST', '/v1/endpoints', {
        name: 'cpu-v1',
        templateId,
        computeType: 'CPU',
        cpuFlavorIds: ['cpu3c'],
        vcpuCount: 2,
        workersMax: 1,
      });
      assert.equal(created.statusCode, 200, created.body);
      assert.deepEqual([json(created).computeType, json(created).instanceIds], ['CPU', ['cpu3c-2-4']]);
      const id = json(created).id;
      await t.request(a.key, 'POST', `/v2/${id}/run`, { input: {} });
      await t.services.autoscaler.tick(clock.now());
      const [worker] = workersOf(t, id);
      assert.ok(worker);
      assert.deepEqual([runtime.specs.get(worker)!.vcpus, runtime.specs.get(worker)!.memoryGb], [2, 4]);
      const changed = await t.request(a.key, 'PATCH', `/v1/endpoints/${id}`, { vcpuCount: 4 });
      assert.equal(changed.statusCode, 200, changed.body);
      assert.deepEqual(json(changed).instanceIds, ['cpu3c-4-8']);
    }));

  test('instanceIds are checked against the catalog of CPU flavors, and not taken with GPU pools or CUDA constraints', () =>
    withApp(async (t, a) => {
      const templateId = await serverlessTemplate(t, a.key);
      for (const [input, pattern] of [
        [
          { instanceIds: ['cpu3g-4-8'] },
          /"cpu3g-4-8" is not a size of CPU flavor cpu3g; its instances are cpu3g-2-8, cpu3g-4-16/,
        ],
        [{ instanceIds: ['cpu9z-2-4'] }, /"cpu9z" is not a CPU flavor/],
        [{ instanceIds: ['big'] }, /"big" is not a CPU instance id: <flavor>-<vCPUs>-<GB of memory>/],
        [{ instanceIds: ['cpu3c-2-4'], gpuIds: 'ADA_24' }, /CPU instances or on GPU pools \(gpuIds\), not both/],
        [{ instanceIds: ['cpu3c-2-4'], allowedCudaVersions: ['12.4'] }, /CUDA constraints apply to GPU endpoints only/],
        [{ gpuIds: 'ADA_24', locations: 'US-XX-9' }, /"US-XX-9" is not a known region or data center/],
      ] as const) {
        const answer = await saveEndpoint(t, a.key, { name: 'bad', templateId, workersMax: 1, ...input });
        assert.equal(answer.data?.saveEndpoint ?? null, null);
        assert.match(answer.errors?.[0]?.message ?? '', pattern, JSON.stringify(input));
      }
    }));

  test("a GPU endpoint's data-center locations (runpodctl --data-center-ids) keep its workers in those data centers, and answers list them", () =>
    withApp(async (t, a, runtime, clock) => {
      const templateId = await serverlessTemplate(t, a.key);
      const ep = (
        await saveEndpoint(t, a.key, {
          name: 'gpu-tx',
          templateId,
          gpuIds: 'ADA_24',
          gpuCount: 1,
          workersMax: 2,
          locations: 'US-TX-3',
          scalerType: 'REQUEST_COUNT',
          scalerValue: 1,
        })
      ).data!.saveEndpoint;
      assert.equal(ep.locations, 'US-TX-3');
      const id = String(ep.id);
      const rest = json(await t.request(a.key, 'GET', '/v2/serverless')).endpoints.find(
        (e: { id: string }) => e.id === id,
      );
      assert.deepEqual(rest.dataCenterIds, ['US-TX-3']);
      const v1 = json(await t.request(a.key, 'GET', `/v1/endpoints/${id}`));
      assert.deepEqual([v1.dataCenterIds, v1.computeType], [['US-TX-3'], 'GPU']);
      for (let i = 0; i < 2; i++) await t.request(a.key, 'POST', `/v2/${id}/run`, { input: { i } });
      const workers = await scaleTo(t, clock, id, 2);
      assert.equal(workers.length, 2);
      for (const w of workers)
        assert.equal(runtime.specs.get(w)!.hostId, 'tx-gpu', 'US-CA-2 is also US, but not named');
    }));
}
