// Worker identity across tenants: account B learns the id of account A's worker (every job reply
// carries `workerId`) and calls the worker protocol with it through B's own endpoint. A worker is
// (endpoint, worker id): none of B's calls may touch A's worker row, its running job, its
// liveness, its recycle request, or A's autoscaling of it.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';
import { FakeClock } from '../src/domain/clock.js';
import { readSse } from './support/sse-client.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

for (const { name, skip } of dialects()) {
  describe(`a worker id used through another account's endpoint, on ${name}`, { skip }, () => {
    let t: TestApp;
    let clock: FakeClock;
    let runtime: FakeRuntime;
    let a: { accountId: string; key: string };
    let b: { accountId: string; key: string };

    /** A worker-protocol call the way the Python SDK makes it: raw key, JSON sent as a form. */
    const call = (key: string, method: 'GET' | 'POST', path: string, body?: unknown) =>
      t.request(null, method, path, body === undefined ? undefined : JSON.stringify(body), {
        authorization: key,
        ...(body === undefined ? {} : FORM),
      });
    const endpointOf = async (accountId: string, workersMax: number) => {
      const template = await t.services.templates.create(accountId, {
        name: `tpl-${Math.random()}`,
        imageName: 'worker:dev',
        isServerless: true,
      });
      return (
        await t.services.endpoints.create(accountId, {
          name: 'ep',
          templateId: template.id,
          gpuIds: 'ADA_24',
          workersMin: 0,
          workersMax,
          idleTimeout: 5,
        })
      ).id;
    };
    const rowOf = (endpointId: string, workerId: string) =>
      t.services.db.kysely
        .selectFrom('workers')
        .selectAll()
        .where('endpoint_id', '=', endpointId)
        .where('id', '=', workerId)
        .executeTakeFirst();

    /** A's endpoint with one launched worker busy with a job, as A's worker itself took it. */
    async function busyLaunchedWorker(): Promise<{ epA: string; workerId: string; workerKey: string; jobId: string }> {
      const epA = await endpointOf(a.accountId, 2);
      const submitted = await t.request(a.key, 'POST', `/v2/${epA}/run`, { input: { secret: 'a' } });
      const jobId = json(submitted).id as string;
      await t.services.autoscaler.tick(clock.now());
      const [workerId] = t.services.autoscaler.workerIds(epA);
      assert.ok(workerId, 'the autoscaler launched a worker for the queued job');
      const workerKey = runtime.specs.get(workerId)!.platformEnv.RUNPOD_AI_API_KEY!;
      const taken = await call(workerKey, 'GET', `/v2/${epA}/job-take/${workerId}?job_in_progress=0`);
      assert.equal(taken.statusCode, 200, taken.body);
      assert.equal(json(taken).id, jobId);
      const status = json(await t.request(a.key, 'GET', `/v2/${epA}/status/${jobId}`));
      assert.equal(status.workerId, workerId, "A's job reply names its worker: B may learn the id");
      return { epA, workerId, workerKey, jobId };
    }

    before(async () => {
      clock = new FakeClock(Date.UTC(2026, 0, 1));
      runtime = new FakeRuntime();
      t = await createTestApp({
        dialect: name,
        clock,
        runtime,
        file: { jobs: { takeWaitMs: 20, stopWaitMs: 20, heartbeatTimeoutMs: 30_000 } },
      });
      await t.services.autoscaler.start({ loop: false });
      a = await t.newAccount('tenant-a');
      b = await t.newAccount('tenant-b');
    });
    after(async () => {
      await t?.services.autoscaler.stop();
      await t?.close();
    });

    test("B's pings, takes, stop polls, result and stream posts and unhealthy report with A's worker id leave A's worker, job and autoscaling untouched", async () => {
      const { epA, workerId, workerKey, jobId } = await busyLaunchedWorker();
      const epB = await endpointOf(b.accountId, 2);
      const before = await rowOf(epA, workerId);

      const attacks = [
        await call(b.key, 'GET', `/v2/${epB}/ping/${workerId}?job_id=`),
        await call(b.key, 'GET', `/v2/${epB}/job-take/${workerId}?job_in_progress=0`),
        await call(b.key, 'GET', `/v2/${epB}/job-take-batch/${workerId}?batch_size=5`),
        await call(b.key, 'GET', `/v2/${epB}/job-stop/${workerId}`),
        await call(b.key, 'POST', `/v2/${epB}/job-done/${workerId}/${jobId}?isStream=false`, {
          output: 'forged',
          stopPod: true,
        }),
        await call(b.key, 'POST', `/v2/${epB}/job-stream/${workerId}/${jobId}?isStream=false`, {
          output: 'forged chunk',
        }),
        await call(b.key, 'GET', `/v2/${epB}/ping/${workerId}?status=unhealthy&check=x&reason=y`),
      ];
      assert.deepEqual(
        attacks.map((r) => r.statusCode),
        [200, 204, 204, 204, 404, 404, 200],
        "through B's own endpoint the calls are B's worker's; A's job is not found there",
      );

      // B's autoscaling and the job time pass while A's worker keeps pinging through its endpoint.
      for (let i = 0; i < 3; i++) {
        clock.advance(10_000);
        assert.equal((await call(workerKey, 'GET', `/v2/${epA}/ping/${workerId}?job_id=${jobId}`)).statusCode, 200);
        await call(b.key, 'GET', `/v2/${epB}/ping/${workerId}`);
        await t.services.timekeeper.tick(clock.now());
        await t.services.autoscaler.tick(clock.now());
      }

      const row = await rowOf(epA, workerId);
      assert.equal(row?.endpoint_id, epA);
      assert.equal(row?.host_id, before?.host_id, "A's row keeps its host: it is still A's launched worker");
      assert.ok(row && ['idle', 'running'].includes(row.status), `A's worker is live (status ${row?.status})`);
      assert.equal(
        (await rowOf(epB, workerId))?.host_id,
        null,
        "B's calls made a hand-attached worker of B's endpoint, nothing more",
      );
      assert.ok(runtime.specs.has(workerId), "A's instance was never stopped");
      assert.deepEqual(t.services.autoscaler.workerIds(epA), [workerId]);
      assert.deepEqual(t.services.autoscaler.workerIds(epB), [], "B's endpoint never adopted A's worker");
      assert.equal(
        t.services.workers.takeRecycleRequest(epA, workerId),
        false,
        "B's stopPod did not ask A's worker to recycle",
      );
      const job = json(await t.request(a.key, 'GET', `/v2/${epA}/status/${jobId}`));
      assert.deepEqual(
        [job.status, job.workerId, job.retries ?? 0, job.output],
        ['IN_PROGRESS', workerId, 0, undefined],
        "A's running job is untouched",
      );
      const stream = json(await t.request(a.key, 'GET', `/v2/${epA}/stream/${jobId}?wait=1000`));
      assert.deepEqual(stream.stream, [], "B's chunk never reached A's job");

      const done = await call(workerKey, 'POST', `/v2/${epA}/job-done/${workerId}/${jobId}?isStream=false`, {
        output: { by: 'a' },
      });
      assert.equal(done.statusCode, 200, done.body);
      assert.deepEqual(json(await t.request(a.key, 'GET', `/v2/${epA}/status/${jobId}`)).output, { by: 'a' });
    });

    test("B's pings with A's worker id do not keep A's silent worker alive: its job goes back to A's queue", async () => {
      const { epA, workerId, jobId } = await busyLaunchedWorker();
      const epB = await endpointOf(b.accountId, 0);
      for (let i = 0; i < 4; i++) {
        clock.advance(10_000);
        await call(b.key, 'GET', `/v2/${epB}/ping/${workerId}?job_id=${jobId}`);
        await t.services.timekeeper.tick(clock.now());
      }
      assert.equal((await rowOf(epA, workerId))?.status, 'dead', "A's worker fell silent: lost, whatever B sends");
      assert.ok(
        ['idle', 'running'].includes((await rowOf(epB, workerId))?.status ?? ''),
        "B's own same-named worker lives on",
      );
      const job = json(await t.request(a.key, 'GET', `/v2/${epA}/status/${jobId}`));
      assert.equal(job.status, 'IN_QUEUE');
      assert.equal(job.retries, 1);
    });

    test("B's takes saying its worker holds no job and B's pings listing none, with A's worker id, never give back A's job", async () => {
      const { epA, workerId, workerKey, jobId } = await busyLaunchedWorker();
      const epB = await endpointOf(b.accountId, 0);
      // Long enough that A's own worker, pinging a list without the job, would lose it.
      clock.advance(60_000);
      const attacks = [
        await call(b.key, 'GET', `/v2/${epB}/job-take/${workerId}?job_in_progress=0`),
        await call(b.key, 'GET', `/v2/${epB}/job-take-batch/${workerId}?batch_size=3&job_in_progress=false`),
        await call(b.key, 'GET', `/v2/${epB}/ping/${workerId}?runpod_version=1.12.0`),
        await call(b.key, 'GET', `/v2/${epB}/ping/${workerId}?job_id=&runpod_version=1.12.0`),
        await call(b.key, 'GET', `/v2/${epB}/ping/${workerId}?job_id=someone-else&runpod_version=1.12.0`),
        await call(b.key, 'GET', `/v2/${epA}/job-take/${workerId}?job_in_progress=0`),
        await call(b.key, 'GET', `/v2/${epA}/ping/${workerId}?runpod_version=1.12.0`),
      ];
      assert.deepEqual(
        attacks.map((r) => r.statusCode),
        [204, 204, 200, 200, 200, 404, 404],
        "through B's own endpoint they are B's worker's; A's endpoint is not B's to name",
      );
      const job = json(await t.request(a.key, 'GET', `/v2/${epA}/status/${jobId}`));
      assert.deepEqual(
        [job.status, job.workerId, job.retries ?? 0],
        ['IN_PROGRESS', workerId, 0],
        "A's job is untouched",
      );
      // and the same report from A's own worker does give it back: the attacks above were aimed right
      assert.equal((await call(workerKey, 'GET', `/v2/${epA}/ping/${workerId}?runpod_version=1.12.0`)).statusCode, 200);
      const back = json(await t.request(a.key, 'GET', `/v2/${epA}/status/${jobId}`));
      assert.deepEqual([back.status, back.retries], ['IN_QUEUE', 1]);
    });

    test("another account's worker logs are a 404 through its endpoint and through the intruder's own, while the owner reads the worker's system lines", async () => {
      const { epA, workerId } = await busyLaunchedWorker();
      const epB = await endpointOf(b.accountId, 1);
      for (const [k, ep, worker] of [
        [b.key, epA, workerId],
        [b.key, epB, workerId],
        [a.key, epA, 'nosuchworker'],
        [a.key, epB, workerId],
      ] as const) {
        const res = await t.request(k, 'GET', `/v2/serverless/${ep}/workers/${worker}/logs`);
        assert.equal(res.statusCode, 404, `${ep}/${worker}: ${res.body}`);
        assert.match(String(res.headers['content-type']), /application\/problem\+json/);
      }
      const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
      const read = await readSse(`${base}/v2/serverless/${epA}/workers/${workerId}/logs?source=system`, {
        headers: { authorization: `Bearer ${a.key}` },
        until: (events) => events.length >= 2,
      });
      assert.equal(read.status, 200);
      const lines = read.events.map((e) => JSON.parse(e.data).line as string);
      assert.match(lines[0]!, /^placed on host .*; pulling \(if needed\) and starting image worker:dev$/);
      assert.equal(lines[1], 'started');
    });
  });
}
