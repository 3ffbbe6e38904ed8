/**
 * Load-balancing endpoints on two control-plane replicas (docs/load-balancing.md, "Replicas"): two
 * real `gantry serve` processes on one PostgreSQL schema, process runtime, workers real processes
 * (test/fixtures/lb-worker.mjs) that replica A — started first, so holding the autoscaler lease —
 * launches. Replica B learns them from the workers table, read when A tells it of a change (its
 * periodic read is all but off here), and health-checks them itself, at the host ports A recorded; each replica writes its requests waiting and held to the store, and A scales
 * on the sum. Idle scaling runs on the replicas' own clocks (processes of their own: no clock can
 * be injected), with a short idleTimeout; the test waits for conditions, never for a fixed time.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, freePortRange } from './support/eventually.js';
import { openTestDb, postgresUrl, type TestDb } from './support/harness.js';
import { spawnGantry, type SpawnedGantry } from './support/spawn-gantry.js';

const KEY = 'lb-replicas-e2e-admin-key-0123456789';
const SECRET = 'ab'.repeat(32);
const LB_WORKER = 'test/lb-worker';

describe(
  'load-balancing endpoints on two replicas sharing PostgreSQL',
  { skip: postgresUrl() ? false : 'GANTRY_TEST_DATABASE_URL is not set' },
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'gantry-lb-replicas-'));
    let t: TestDb;
    const replicas: SpawnedGantry[] = [];
    let endpointId = '';
    /** Each replica's own address of the endpoint (its own proxy listener). */
    const lbUrls: string[] = [];
    const auth = { authorization: `Bearer ${KEY}` };

    const api = async <T>(replica: SpawnedGantry, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${replica.url}${path}`, {
        method,
        headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
    };
    const workers = async () =>
      (
        await api<{ workers: Array<{ id: string; status: string }> }>(
          replicas[0]!,
          'GET',
          `/v2/serverless/${endpointId}/workers`,
        )
      ).body.workers;
    const diagnostics = () =>
      replicas.map((r, i) => `--- replica ${'AB'[i]} ---\n${r.output().slice(-3000)}`).join('\n');
    const launchedBy = (replica: SpawnedGantry, workerId: string) =>
      replica
        .output()
        .split('\n')
        .some((line) => line.includes('launching worker') && line.includes(workerId));

    before(async () => {
      t = await openTestDb('postgres');
      const env = {
        GANTRY_DATABASE_URL: postgresUrl()!,
        GANTRY_DATABASE_SCHEMA: t.schema,
        GANTRY_SECRET_KEY: SECRET,
        GANTRY_BOOTSTRAP_KEY: KEY,
        GANTRY_LOG_LEVEL: 'info',
      };
      const config = join(dir, 'config.json');
      writeFileSync(
        config,
        JSON.stringify({
          images: {
            [LB_WORKER]: { command: [process.execPath, join(import.meta.dirname, 'fixtures', 'lb-worker.mjs')] },
          },
          fleet: [
            {
              id: 'lb-host',
              dataCenterId: 'US-TX-3',
              gpuTypeId: 'NVIDIA GeForce RTX 4090',
              gpuCount: 4,
              cudaVersion: '12.4',
              portRange: await freePortRange(20),
            },
          ],
          // The periodic read of the workers table all but off: replica B learns each launch,
          // suspension, resumption and stop from A's word through the database's notifications.
          proxy: {
            port: 0,
            loadBalancer: { workerWaitMs: 60_000, healthIntervalMs: 100, replicas: { refreshMs: 600_000 } },
          },
          serverless: { autoscaler: { intervalMs: 200, nudgeGapMs: 0 } },
        }),
      );
      // A first: it takes the autoscaler lease before it listens; B, started once A listens, does not.
      for (const name of ['replica-a', 'replica-b'])
        replicas.push(
          await spawnGantry(['--host', '127.0.0.1', '--data-dir', join(dir, name), '--config', config], env),
        );
      const template = await api<{ id: string }>(replicas[0]!, 'POST', '/v2/templates', {
        name: 'lb-replicas',
        image: LB_WORKER,
        serverless: true,
        containerDiskInGb: 5,
      });
      assert.equal(template.status, 201, JSON.stringify(template.body));
      const endpoint = await api<{ id: string }>(replicas[0]!, 'POST', '/v2/serverless', {
        name: 'lb-replicas',
        templateId: template.body.id,
        type: 'LOAD_BALANCER',
        gpu: { pools: ['ADA_24'] },
        scaling: { type: 'REQUEST_COUNT', requestCount: 1 },
        workers: { min: 0, max: 2, idleTimeout: 2 },
      });
      assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
      endpointId = endpoint.body.id;
      for (const r of replicas) {
        const view = await api<{ loadBalancerUrl: string }>(r, 'GET', `/v2/serverless/${endpointId}`);
        lbUrls.push(view.body.loadBalancerUrl);
      }
      assert.notEqual(lbUrls[0], lbUrls[1], "each replica answers with its own proxy listener's address");
    });

    after(async () => {
      for (const r of replicas) await r.stop();
      await t?.cleanup();
      rmSync(dir, { recursive: true, force: true });
    });

    let first = '';

    test('the first request, sent to the replica without the autoscaler lease, waits while the lease holder starts a worker, and is answered by it', async () => {
      assert.deepEqual(await workers(), [], 'no worker before the first request');
      const res = await fetch(`${lbUrls[1]}/echo/first`, { method: 'POST', headers: auth, body: 'hello' });
      assert.equal(res.status, 200, `${await res.clone().text()}\n${diagnostics()}`);
      const seen = (await res.json()) as { workerId: string; url: string; bytes: number };
      first = seen.workerId;
      assert.equal(res.headers.get('x-runpod-worker-id'), first);
      assert.equal(seen.url, '/echo/first');
      assert.equal(seen.bytes, 5);
      await eventually(
        () => `replica A (the lease holder) to log the launch\n${diagnostics()}`,
        async () => launchedBy(replicas[0]!, first),
        15_000,
      );
      assert.ok(!launchedBy(replicas[1]!, first), 'replica B launched nothing');
      assert.deepEqual(
        (await workers()).map((w) => w.id),
        [first],
        'one worker for one request',
      );
    });

    test("requests held on both replicas count together: the second worker starts, and both replicas' requests spread over the two workers", async () => {
      const [a, b] = lbUrls as [string, string];
      // One request held through each replica: each replica alone holds one (one worker's worth at
      // requestCount 1); only their sum calls for a second worker.
      const heldA = fetch(`${a}/hold?id=ha`, { headers: auth });
      const heldB = fetch(`${b}/hold?id=hb`, { headers: auth });
      const both = await eventually(
        () => `a second worker\n${diagnostics()}`,
        async () => {
          const list = await workers();
          return list.length === 2 ? list.map((w) => w.id) : null;
        },
        60_000,
      );
      const second = both.find((id) => id !== first)!;
      // the replica's log lines reach its stdout in batches (up to 100 ms late): wait for the line
      await eventually(
        () => `the lease holder (A) to log the second worker's launch\n${diagnostics()}`,
        async () => launchedBy(replicas[0]!, second),
        15_000,
      );
      assert.ok(!launchedBy(replicas[1]!, second), 'replica B launched nothing');
      // Once the second is ready on a replica, that replica sends new requests to it (the first
      // holds a request there); both replicas reach both workers.
      const seen = new Map<string, Set<string>>([
        [a, new Set()],
        [b, new Set()],
      ]);
      for (const url of [a, b])
        await eventually(
          () => `${url} to reach the second worker (seen ${[...seen.get(url)!].join(', ')})\n${diagnostics()}`,
          async () => {
            const res = await fetch(`${url}/echo`, { headers: auth });
            assert.equal(res.status, 200);
            const id = ((await res.json()) as { workerId: string }).workerId;
            seen.get(url)!.add(id);
            return id === second;
          },
          60_000,
        );
      // Each held request is on one of the workers; release them where they are.
      for (const [url, id] of [
        [a, 'ha'],
        [b, 'hb'],
      ] as const)
        for (const worker of both) {
          const res = await fetch(`${url}/release?id=${id}`, {
            headers: { ...auth, 'x-runpod-worker-id': `strict ${worker}` },
          });
          await res.arrayBuffer();
        }
      const [ra, rb] = await Promise.all([heldA, heldB]);
      assert.equal(ra.status, 200);
      assert.equal(rb.status, 200);
      const holders = new Set([ra.headers.get('x-runpod-worker-id'), rb.headers.get('x-runpod-worker-id')]);
      for (const id of holders) assert.ok(both.includes(id!), `a held request was answered by one of the two (${id})`);
      await Promise.all([ra.arrayBuffer(), rb.arrayBuffer()]);
    });

    test('idle workers stop after idleTimeout, down to zero, and leave both replicas’ pools: the next request through B starts a new one', async () => {
      await eventually(
        () => `no workers left\n${diagnostics()}`,
        async () => (await workers()).length === 0,
        60_000,
      );
      const res = await fetch(`${lbUrls[1]}/echo/again`, { headers: auth });
      assert.equal(res.status, 200, `${await res.clone().text()}\n${diagnostics()}`);
      const id = ((await res.json()) as { workerId: string }).workerId;
      assert.notEqual(id, first, 'a new worker, not a stopped one');
    });

    test('FlashBoot: the lease holder suspends an idle worker; a request through B resumes the same process with no launch, and strict-resume through B resumes it again', async () => {
      const template = await api<{ id: string }>(replicas[0]!, 'POST', '/v2/templates', {
        name: 'lb-replicas-flash',
        image: LB_WORKER,
        serverless: true,
        containerDiskInGb: 5,
      });
      const endpoint = await api<{ id: string }>(replicas[0]!, 'POST', '/v2/serverless', {
        name: 'lb-replicas-flash',
        templateId: template.body.id,
        type: 'LOAD_BALANCER',
        gpu: { pools: ['ADA_24'] },
        scaling: { type: 'REQUEST_COUNT', requestCount: 1 },
        workers: { min: 0, max: 2, idleTimeout: 1 },
        flashboot: 'FLASHBOOT',
      });
      assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
      const id = endpoint.body.id;
      const viaB = (await api<{ loadBalancerUrl: string }>(replicas[1]!, 'GET', `/v2/serverless/${id}`)).body
        .loadBalancerUrl;
      const list = async () =>
        (
          await api<{ workers: Array<{ id: string; status: string }> }>(
            replicas[0]!,
            'GET',
            `/v2/serverless/${id}/workers`,
          )
        ).body.workers;
      const whoami = async (affinity?: string) => {
        const res = await fetch(`${viaB}/whoami`, {
          headers: { ...auth, ...(affinity ? { 'x-runpod-worker-id': affinity } : {}) },
        });
        assert.equal(res.status, 200, `${await res.clone().text()}\n${diagnostics()}`);
        return (await res.json()) as { workerId: string; pid: number; boot: string };
      };
      const suspended = (workerId: string) =>
        eventually(
          () => `worker ${workerId} to be suspended\n${diagnostics()}`,
          async () => (await list()).some((w) => w.id === workerId && w.status === 'SUSPENDED'),
          60_000,
        );
      const w = await whoami();
      await suspended(w.workerId);
      const again = await whoami();
      assert.deepEqual([again.workerId, again.pid, again.boot], [w.workerId, w.pid, w.boot], 'the same process');
      await suspended(w.workerId);
      const pinned = await whoami(`strict-resume ${w.workerId}`);
      assert.deepEqual([pinned.workerId, pinned.pid, pinned.boot], [w.workerId, w.pid, w.boot]);
      assert.deepEqual(
        (await list()).map((x) => x.id),
        [w.workerId],
        'one worker all along: no launch',
      );
    });
  },
);
