/**
 * FlashBoot end to end (issue 30, steps 2–3): a real server (SQLite, the process runtime) launches
 * real worker processes (test/fixtures/echo-worker.ts). A FlashBoot endpoint's idle worker is
 * suspended (its process frozen: SIGSTOP, state `T`), not stopped; the next job resumes it and is
 * completed by the same worker, with no new launch; after the keep time it is removed. An
 * endpoint without FlashBoot still stops its idle worker. A job that arrives while a worker is
 * being suspended, or that it held when it was frozen, is requeued and completed.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { startServer, type RunningServer } from '../src/main.js';
import { eventually } from './support/eventually.js';

const WORKER_SCRIPT = resolve(import.meta.dirname, 'fixtures/echo-worker.ts');
/** The keep time the config allows (short, so the test sees it end). */
const MAX_KEEP_MS = 4_000;

/** The state letter of a process (`/proc/PID/stat`: `T` stopped, `S` sleeping, `R` running), or null when it is gone. */
function processState(pid: number): string | null {
  const file = `/proc/${pid}/stat`;
  if (!existsSync(file)) return null;
  const stat = readFileSync(file, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? null;
}

describe('FlashBoot end to end (process runtime, real workers)', () => {
  let dir: string;
  let server: RunningServer;
  let accountId: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gantry-flashboot-'));
    const file = {
      server: { port: 0 },
      images: {
        'node-worker:dev': {
          command: [process.execPath, '--import', 'tsx', WORKER_SCRIPT],
          cwd: resolve(import.meta.dirname, '..'),
        },
      },
      jobs: { timekeeperIntervalMs: 200, pingIntervalMs: 1_000 },
      pods: { stopGraceMs: 2_000 },
      serverless: { autoscaler: { intervalMs: 100 }, flashboot: { maxKeepMs: MAX_KEEP_MS } },
    };
    writeFileSync(join(dir, 'config.json'), JSON.stringify(file));
    const config = loadConfig({
      env: { GANTRY_DATA_DIR: dir, GANTRY_CONFIG: join(dir, 'config.json'), GANTRY_LOG_LEVEL: 'silent' },
    });
    server = await startServer(config, { logger: pino({ level: 'silent' }), print: () => {} });
    accountId = (await server.services.accounts.accountByName('admin')).id;
  });
  after(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const endpointFor = async (name: string, patch: Record<string, unknown> = {}) => {
    const { templates, endpoints } = server.services;
    const template = await templates.create(accountId, {
      name: `t-${name}`,
      imageName: 'node-worker:dev',
      isServerless: true,
      containerDiskInGb: 5,
    });
    return endpoints.create(accountId, {
      name,
      templateId: template.id,
      gpuIds: 'ADA_24',
      workersMin: 0,
      workersMax: 1,
      idleTimeout: 1,
      scalerType: 'QUEUE_DELAY',
      scalerValue: 4,
      ...patch,
    });
  };

  const finished = async (endpointId: string, id: string) => {
    const { jobs, autoscaler } = server.services;
    const view = await eventually(
      () => `job ${id} to finish (${JSON.stringify(autoscaler.health(endpointId))})`,
      async () => {
        const v = await jobs.client.status(accountId, endpointId, id);
        return v.status === 'COMPLETED' || v.status === 'FAILED' ? v : null;
      },
    );
    assert.equal(view.status, 'COMPLETED', JSON.stringify(view));
    return view as typeof view & { workerId: string; output: { pid: number } };
  };

  const rowStatus = async (workerId: string) =>
    (
      await server.services.db.kysely
        .selectFrom('workers')
        .select('status')
        .where('id', '=', workerId)
        .executeTakeFirst()
    )?.status;

  test("a FlashBoot endpoint's idle worker is suspended, not stopped; the next job resumes it and the same worker completes it; after the keep time it is removed", async () => {
    const { jobs, autoscaler, runtime, workers } = server.services;
    const endpoint = await endpointFor('e-flash', { flashboot: true });
    const first = await finished(
      endpoint.id,
      (await jobs.client.submit(endpoint.id, accountId, { input: { n: 1 } })).id,
    );
    const workerId = first.workerId;
    const pid = first.output.pid;

    await eventually('the idle worker to be suspended', async () => (await rowStatus(workerId)) === 'suspended');
    assert.deepEqual(autoscaler.workerIds(endpoint.id), [workerId], 'kept, not stopped');
    assert.equal((await runtime.inspect(workerId))?.state, 'suspended');
    assert.equal(processState(pid), 'T', 'its process is frozen (SIGSTOP)');
    assert.equal((await workers.healthCounts(endpoint.id)).suspended, 1, '/health counts it apart');
    assert.equal((await workers.healthCounts(endpoint.id)).idle, 0);
    await eventually(
      'the `gantry_workers{state="suspended"}` source to count it',
      async () => autoscaler.workerTotals().suspended >= 1,
    );

    const starts = autoscaler.decisions.starts;
    const resumes = autoscaler.decisions.resumes;
    const second = await finished(
      endpoint.id,
      (await jobs.client.submit(endpoint.id, accountId, { input: { n: 2 } })).id,
    );
    assert.equal(second.workerId, workerId, 'the same worker completed it');
    assert.equal(second.output.pid, pid, 'in the same process');
    assert.equal(autoscaler.decisions.starts, starts, 'no new launch');
    assert.equal(autoscaler.decisions.resumes, resumes + 1);

    // Idle again: suspended again, then removed once the keep time is over.
    await eventually('the worker to be suspended again', async () => (await rowStatus(workerId)) === 'suspended');
    await eventually(
      'the keep time to remove the suspended worker',
      async () =>
        autoscaler.workerIds(endpoint.id).length === 0 &&
        (await runtime.inspect(workerId)) === null &&
        (await rowStatus(workerId)) === 'dead',
      MAX_KEEP_MS + 15_000,
    );
    await eventually('its process to be gone', async () => processState(pid) === null || processState(pid) === 'Z');
  });

  test('an endpoint without FlashBoot still stops its idle worker', async () => {
    const { jobs, autoscaler, runtime } = server.services;
    const endpoint = await endpointFor('e-plain');
    const done = await finished(endpoint.id, (await jobs.client.submit(endpoint.id, accountId, { input: {} })).id);
    const suspends = autoscaler.decisions.suspends;
    await eventually(
      'the idle worker to be stopped',
      async () =>
        autoscaler.workerIds(endpoint.id).length === 0 &&
        (await runtime.inspect(done.workerId)) === null &&
        (await rowStatus(done.workerId)) === 'dead',
      15_000,
    );
    assert.equal(autoscaler.decisions.suspends, suspends, 'not suspended');
  });

  test('no job is lost or frozen: jobs arriving while a worker is being suspended, and the job it held when frozen, are requeued, with no retry counted, and completed by it', async () => {
    const { jobs, autoscaler } = server.services;
    // A long idle timeout: only the suspensions asked here happen.
    const endpoint = await endpointFor('e-race', { flashboot: true, idleTimeout: 3600 });
    const first = await finished(endpoint.id, (await jobs.client.submit(endpoint.id, accountId, { input: {} })).id);
    const workerId = first.workerId;
    const starts = autoscaler.decisions.starts;

    for (let round = 0; round < 5; round++) {
      await eventually('the worker to run', async () => (await rowStatus(workerId)) !== 'suspended');
      const [suspended, submitted] = await Promise.all([
        autoscaler.suspendWorker(workerId),
        jobs.client.submit(endpoint.id, accountId, { input: { round } }),
      ]);
      assert.ok(suspended.ok || /resuming|suspending/.test(suspended.reason), JSON.stringify(suspended));
      const done = await finished(endpoint.id, submitted.id);
      assert.equal(done.workerId, workerId);
    }

    // Frozen while it holds a job: the job goes back to the queue, and the worker, resumed for it, completes it.
    await eventually('the worker to run', async () => (await rowStatus(workerId)) !== 'suspended');
    const held = await jobs.client.submit(endpoint.id, accountId, { input: { holdMs: 1_500 } });
    await eventually(
      'the job to be taken',
      async () => (await jobs.client.status(accountId, endpoint.id, held.id)).status === 'IN_PROGRESS',
    );
    const suspended = await autoscaler.suspendWorker(workerId);
    assert.ok(suspended.ok, JSON.stringify(suspended));
    const done = await finished(endpoint.id, held.id);
    assert.equal(done.workerId, workerId);
    assert.equal(done.retries, 0, 'taken back by the platform, not failed by its worker: no retry counted');
    assert.equal(autoscaler.decisions.starts, starts, 'no new launch in all of it');
  });

  test('a worker that is not running here cannot be suspended, and saying so', async () => {
    const r = await server.services.autoscaler.suspendWorker('no-such-worker');
    assert.deepEqual(r, { ok: false, reason: 'worker no-such-worker is not running here' });
  });
});
