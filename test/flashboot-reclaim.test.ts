/**
 * FlashBoot's suspended workers give their GPUs back on demand (issue 30, step 4; docs/pods.md
 * "The reclaim ladder", docs/serverless.md "FlashBoot"), on SQLite and PostgreSQL, with the
 * process runtime (real worker processes, frozen by SIGSTOP) on a fleet of one single-GPU host
 * and an injected clock (the autoscaler's passes are driven by hand):
 * - a pod that finds no free GPU takes a suspended worker's: the worker is removed (its process
 *   gone, its row dead, its log saying `reclaimed: …`), the pod runs, a resume of the worker loses;
 * - a worker that is not suspended is never taken: the pod is refused as before;
 * - suspended time is billed at `serverless.flashboot.suspendedPricePerGpuHour`, not as running.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';
import { eventually } from './support/eventually.js';
import { FakeClock } from '../src/domain/clock.js';
import { newId } from '../src/domain/ids.js';

const GPU = 'NVIDIA GeForce RTX 4090';
const HOUR = 3_600_000;
const SUSPENDED_PRICE = 0.05;
const fleet = [
  { id: 'solo', dataCenterId: 'US-TX-3', gpuTypeId: GPU, gpuCount: 1, cudaVersion: '12.4', portRange: [24000, 24099] },
];
const usd = (x: number): number => Math.round(x * 1e9) / 1e9;

/** The pids of live processes whose command line holds `marker` (state `T` when frozen). */
function processesWith(marker: string): Array<{ pid: number; state: string }> {
  const found: Array<{ pid: number; state: string }> = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (!readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(marker)) continue;
      const stat = `/proc/${name}/stat`;
      if (!existsSync(stat)) continue;
      const text = readFileSync(stat, 'utf8');
      const state = text.slice(text.lastIndexOf(')') + 2).split(' ')[0] ?? '?';
      if (state !== 'Z') found.push({ pid: Number(name), state });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

for (const { name: dialect, skip } of dialects()) {
  describe(`suspended workers give their GPUs back on ${dialect} (process runtime)`, { skip }, () => {
    let t: TestApp;
    const clock = new FakeClock(Date.parse('2026-06-02T01:00:00Z'));
    // Every worker process of this suite carries it on its command line.
    const marker = `gantry-reclaim-${newId(8)}`;
    let owner: { accountId: string; key: string };
    let tenant: { accountId: string; key: string };

    before(async () => {
      t = await createTestApp({
        dialect,
        clock,
        file: {
          rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 },
          fleet,
          images: {
            'sleeper:dev': { command: [process.execPath, '-e', 'setInterval(() => {}, 1 << 30)', marker] },
          },
          pods: { stopGraceMs: 2_000 },
          serverless: { flashboot: { suspendedPricePerGpuHour: SUSPENDED_PRICE } },
        },
      });
      await t.services.autoscaler.start({ loop: false });
      owner = await t.newAccount('worker-owner');
      tenant = await t.newAccount('pod-tenant');
    });
    after(async () => {
      await t?.services.autoscaler.stop();
      await t?.close();
    });

    /** A FlashBoot endpoint of `owner` with one worker launched (its process running). */
    const launchedWorker = async (
      name: string,
      account = owner,
      after: { workersMin: number; workersMax: number } = { workersMin: 0, workersMax: 0 },
    ) => {
      const { templates, endpoints, autoscaler, runtime } = t.services;
      const template = await templates.create(account.accountId, {
        name: `t-${name}`,
        imageName: 'sleeper:dev',
        isServerless: true,
        containerDiskInGb: 5,
      });
      const endpoint = await endpoints.create(account.accountId, {
        name,
        templateId: template.id,
        gpuIds: 'ADA_24',
        workersMin: 1,
        workersMax: 1,
        idleTimeout: 3600,
        flashboot: true,
      });
      await autoscaler.tick(clock.now());
      const [workerId] = autoscaler.workerIds(endpoint.id);
      assert.ok(workerId, 'a worker was launched');
      await eventually('the worker to run', async () => (await runtime.inspect(workerId))?.state === 'running');
      // By default nothing more is launched for it: its endpoint wants none once this one is gone.
      await endpoints.update(account.accountId, endpoint.id, after);
      return { endpoint, workerId };
    };
    const createPod = (name: string) =>
      t.request(tenant.key, 'POST', '/v2/pods', { name, image: 'sleeper:dev', gpu: { id: GPU } });
    /** The catalog's availability of the GPU for a pod: what an on-demand create can get. */
    const catalogAvailability = async () =>
      json<{ availability: string }>(
        await t.request(
          tenant.key,
          'GET',
          `/v2/catalog/gpus/${encodeURIComponent(GPU)}?include=AVAILABILITY&product=POD&cloud=SECURE`,
        ),
      ).availability;
    const rowStatus = async (workerId: string) =>
      (await t.services.db.kysely.selectFrom('workers').select('status').where('id', '=', workerId).executeTakeFirst())
        ?.status;

    test('a worker that is not suspended is never taken back: the pod finds no capacity, and the worker runs on', async () => {
      const { workerId, endpoint } = await launchedWorker('e-running');
      assert.equal(await catalogAvailability(), 'NONE', 'a running worker’s GPU is not available');
      const refused = await createPod('needs-the-gpu');
      assert.equal(refused.statusCode, 400, refused.body);
      assert.match(refused.body, /NO_CAPACITY|no .*capacity|GPU/i);
      assert.equal((await t.services.runtime.inspect(workerId))?.state, 'running');
      assert.equal(processesWith(marker).length, 1, 'its process runs on');
      await t.services.autoscaler.tick(clock.now()); // workersMax 0: removed, the host free again
      await eventually('the worker to be removed', async () => (await rowStatus(workerId)) === 'dead');
      await eventually('its process to be gone', async () => processesWith(marker).length === 0);
      assert.deepEqual(t.services.autoscaler.workerIds(endpoint.id), []);
    });

    test("a pod that finds no free GPU takes a suspended worker's: the worker is removed, the pod runs, suspended time was billed at the suspended price", async () => {
      const { autoscaler, runtime, db } = t.services;
      const launchedAt = clock.now();
      const { workerId, endpoint } = await launchedWorker('e-suspended');
      const [proc] = processesWith(marker);
      assert.ok(proc, 'its process runs');
      clock.advance(HOUR / 2);
      const suspended = await autoscaler.suspendWorker(workerId);
      assert.deepEqual(suspended, { ok: true });
      await eventually(
        'its process to be frozen (SIGSTOP: state T)',
        async () => processesWith(marker).find((p) => p.pid === proc.pid)?.state === 'T',
      );
      clock.advance(HOUR);
      // not free (reserved), but available to a create, as an interruptible pod's GPU is
      assert.notEqual(await catalogAvailability(), 'NONE', 'a suspended worker’s GPU is available to a create');
      assert.deepEqual(
        t.services.inventory.gpuUsage().map((h) => h.used),
        [1],
      );

      const created = await createPod('takes-the-gpu');
      assert.equal(created.statusCode, 201, created.body);
      const podId = json<{ id: string }>(created).id;
      // The worker is removed as the keep time's end removes one; the pod starts once it is gone.
      await eventually('the worker to be removed', async () => (await rowStatus(workerId)) === 'dead');
      await eventually('its process to be gone', async () => !processesWith(marker).some((p) => p.pid === proc.pid));
      assert.equal(await runtime.inspect(workerId), null);
      assert.deepEqual(autoscaler.workerIds(endpoint.id), []);
      const log = await db.kysely
        .selectFrom('system_log')
        .select('line')
        .where('instance_id', '=', workerId)
        .orderBy('seq')
        .execute();
      assert.ok(
        log.some((l) =>
          /^reclaimed: its GPUs were taken back for an on-demand pod while it was suspended/.test(l.line),
        ),
        JSON.stringify(log),
      );
      await eventually('the pod to run', async () => {
        const pod = json<{ status: string }>(await t.request(tenant.key, 'GET', `/v2/pods/${podId}`));
        return pod.status === 'RUNNING';
      });
      // The resume that comes too late loses, saying why; the GPU stays the pod's.
      const late = await autoscaler.resumeWorker(workerId);
      assert.equal(late.ok, false);
      assert.equal(t.services.inventory.allocationOf(podId)?.gpuIndices[0], 0);

      // Billed: half an hour running at the GPU's price, one hour suspended at the suspended price.
      const gpu = t.config.catalog.gpuTypes.find((g) => g.id === GPU)!;
      clock.advance(HOUR);
      const billing = json<any>(
        await t.request(owner.key, 'GET', `/v2/billing/serverless?lastN=1&serverlessId=${endpoint.id}`),
      );
      assert.equal(billing.metadata.totals.gpuAmount, usd(0.5 * gpu.securePrice + 1 * SUSPENDED_PRICE));
      const intervals = await db.kysely
        .selectFrom('worker_usage')
        .select(['cost_per_hr', 'started_at', 'ended_at'])
        .where('worker_id', '=', workerId)
        .orderBy('started_at')
        .execute();
      assert.deepEqual(
        intervals.map((i) => [
          Number(i.cost_per_hr),
          Number(i.started_at) - launchedAt,
          Number(i.ended_at) - launchedAt,
        ]),
        [
          [gpu.securePrice, 0, HOUR / 2],
          [SUSPENDED_PRICE, HOUR / 2, HOUR / 2 + HOUR],
        ],
      );
      assert.equal((await t.request(tenant.key, 'DELETE', `/v2/pods/${podId}`)).statusCode, 204);
      await eventually(
        'the pod to give its GPU back',
        async () => t.services.inventory.allocationOf(podId) === undefined,
      );
    });

    test('a resumed worker is billed at its running rate again and is off the ladder', async () => {
      const { autoscaler, db } = t.services;
      const { workerId } = await launchedWorker('e-resumed');
      const gpu = t.config.catalog.gpuTypes.find((g) => g.id === GPU)!;
      clock.advance(60_000);
      assert.deepEqual(await autoscaler.suspendWorker(workerId), { ok: true });
      clock.advance(HOUR);
      assert.deepEqual(await autoscaler.resumeWorker(workerId), { ok: true });
      const refused = await createPod('finds-it-running');
      assert.equal(refused.statusCode, 400, 'a resumed worker is not taken back');
      const rates = await db.kysely
        .selectFrom('worker_usage')
        .select(['cost_per_hr', 'ended_at'])
        .where('worker_id', '=', workerId)
        .orderBy('started_at')
        .execute();
      assert.deepEqual(
        rates.map((r) => [Number(r.cost_per_hr), r.ended_at === null]),
        [
          [gpu.securePrice, false],
          [SUSPENDED_PRICE, false],
          [gpu.securePrice, true],
        ],
      );
      await autoscaler.tick(clock.now()); // workersMax 0: removed, the host free again
      await eventually('the worker to be removed', async () => (await rowStatus(workerId)) === 'dead');
      await eventually('its process to be gone', async () => processesWith(marker).length === 0);
    });

    test("another endpoint's worker launch takes a suspended worker's GPU; the suspended worker is removed and the new one runs", async () => {
      const { autoscaler, runtime, endpoints } = t.services;
      const kept = await launchedWorker('e-kept', owner, { workersMin: 0, workersMax: 1 });
      assert.deepEqual(await autoscaler.suspendWorker(kept.workerId), { ok: true });
      await autoscaler.tick(clock.now());
      assert.deepEqual(autoscaler.workerIds(kept.endpoint.id), [kept.workerId], 'its own endpoint keeps it suspended');
      assert.equal(await rowStatus(kept.workerId), 'suspended');
      const [frozen] = processesWith(marker);
      assert.ok(frozen);

      // The tenant's endpoint wants a worker: its launch finds no free GPU and takes the suspended one's.
      const other = await launchedWorker('e-wants', tenant, { workersMin: 1, workersMax: 1 });
      await eventually('the suspended worker to be removed', async () => (await rowStatus(kept.workerId)) === 'dead');
      await eventually('its process to be gone', async () => !processesWith(marker).some((p) => p.pid === frozen.pid));
      assert.equal((await runtime.inspect(other.workerId))?.state, 'running');
      assert.deepEqual(autoscaler.workerIds(kept.endpoint.id), []);
      await endpoints.update(tenant.accountId, other.endpoint.id, { workersMin: 0, workersMax: 0 });
      await autoscaler.tick(clock.now());
      await eventually('the last worker to be removed', async () => (await rowStatus(other.workerId)) === 'dead');
    });
  });
}
