/**
 * The autoscaler end to end: a real server (HTTP on a loopback port, SQLite, the process runtime)
 * launches real worker processes (test/fixtures/echo-worker.ts, built on src/worker) for a queued
 * job, the worker takes the job over the worker protocol and completes it, and idles out. A worker
 * image that crashes at start is backed off and reported unhealthy, not restarted in a hot loop.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { startServer, type RunningServer } from '../src/main.js';

const WORKER_SCRIPT = resolve(import.meta.dirname, 'fixtures/echo-worker.ts');

/** Polls `check` (real time: these are real processes) until it answers a value, or fails after `ms`. */
async function eventually<T>(
  what: string | (() => string),
  check: () => Promise<T | null | undefined | false>,
  ms = 30_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('autoscaler end to end (process runtime, real workers)', () => {
  let dir: string;
  let server: RunningServer;
  let accountId: string;
  /** Warnings and worse the server logged, parsed. */
  const warnings: Array<{ msg: string; image?: string }> = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gantry-autoscale-'));
    const file = {
      // Port 0: the workers' job URL must name the port the server was given, not 0.
      server: { port: 0 },
      images: {
        // cwd: the repo, so that `--import tsx` resolves.
        'node-worker:dev': {
          command: [process.execPath, '--import', 'tsx', WORKER_SCRIPT],
          cwd: resolve(import.meta.dirname, '..'),
        },
        'crashing-worker:dev': { command: [process.execPath, '-e', 'process.exit(3)'] },
      },
      jobs: { timekeeperIntervalMs: 200, pingIntervalMs: 1_000 },
      pods: { stopGraceMs: 2_000 },
      serverless: { autoscaler: { intervalMs: 100, crashThreshold: 2, backoffBaseMs: 60_000 } },
    };
    writeFileSync(join(dir, 'config.json'), JSON.stringify(file));
    const config = loadConfig({
      env: { GANTRY_DATA_DIR: dir, GANTRY_CONFIG: join(dir, 'config.json'), GANTRY_LOG_LEVEL: 'silent' },
    });
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n'))
          if (line) warnings.push(JSON.parse(line) as { msg: string; image?: string });
        done();
      },
    });
    server = await startServer(config, { logger: pino({ level: 'warn' }, sink), print: () => {} });
    accountId = (await server.services.accounts.accountByName('admin')).id;
  });
  after(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const endpointFor = async (image: string, patch: Record<string, unknown> = {}) => {
    const { templates, endpoints } = server.services;
    const template = await templates.create(accountId, {
      name: `t-${image}-${Date.now()}`,
      imageName: image,
      isServerless: true,
      containerDiskInGb: 5,
    });
    return endpoints.create(accountId, {
      name: `e-${image}`,
      templateId: template.id,
      gpuIds: 'ADA_24',
      workersMin: 0,
      workersMax: 2,
      idleTimeout: 1,
      scalerType: 'QUEUE_DELAY',
      scalerValue: 4,
      ...patch,
    });
  };

  test('a job submitted to an endpoint with no worker starts one; it completes the job and is stopped after idleTimeout', async () => {
    const { jobs, autoscaler, runtime } = server.services;
    const endpoint = await endpointFor('node-worker:dev');
    assert.deepEqual(autoscaler.workerIds(endpoint.id), [], 'scaled to zero before any job');

    const submittedAt = Date.now();
    const { id } = await jobs.client.submit(endpoint.id, accountId, { input: { hello: 'world' } });
    const done = await eventually(
      () => `the job to complete (${JSON.stringify(autoscaler.health(endpoint.id))})`,
      async () => {
        const view = await jobs.client.status(accountId, endpoint.id, id);
        return view.status === 'COMPLETED' || view.status === 'FAILED' ? view : null;
      },
    );
    const completedAt = Date.now();
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
    const output = done.output as { echo: unknown; processStartedAt: number; readyAt: number };
    assert.deepEqual(output.echo, { hello: 'world' });
    assert.ok(done.workerId);
    assert.equal(autoscaler.workerIds(endpoint.id).length, 1, 'one job needs one worker');

    // Cold start: submit → first take (delayTime), minus the worker process's own start-up.
    const workerStartup = output.readyAt - output.processStartedAt;
    const overhead = (done.delayTime ?? 0) - workerStartup;
    console.log(
      `cold start: submit→taken ${done.delayTime} ms, worker process start-up ${workerStartup} ms, platform overhead ≈ ${overhead} ms (submit→completed ${completedAt - submittedAt} ms)`,
    );

    const workerId = done.workerId;
    const rowStatus = async () =>
      (
        await server.services.db.kysely
          .selectFrom('workers')
          .select('status')
          .where('id', '=', workerId)
          .executeTakeFirst()
      )?.status;
    // A stop removes the instance first, then marks the row dead: wait for the whole stop.
    await eventually(
      'the idle worker to be stopped',
      async () =>
        autoscaler.workerIds(endpoint.id).length === 0 &&
        (await runtime.inspect(workerId)) === null &&
        (await rowStatus()) === 'dead',
      15_000,
    );
    assert.equal(await rowStatus(), 'dead');
  });

  test('a CPU endpoint (instanceIds) launches a real worker process on a CPU host with the instance’s vCPUs and no GPU, which completes the job', async () => {
    const { jobs, autoscaler, runtime } = server.services;
    const endpoint = await endpointFor('node-worker:dev', { gpuIds: null, instanceIds: ['cpu3c-2-4'] });
    const { id } = await jobs.client.submit(endpoint.id, accountId, { input: { on: 'cpu' } });
    const done = await eventually(
      () => `the CPU job to complete (${JSON.stringify(autoscaler.health(endpoint.id))})`,
      async () => {
        const view = await jobs.client.status(accountId, endpoint.id, id);
        return view.status === 'COMPLETED' || view.status === 'FAILED' ? view : null;
      },
    );
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
    assert.deepEqual((done.output as { echo: unknown }).echo, { on: 'cpu' });
    const status = await runtime.inspect(done.workerId!);
    assert.ok(status, 'the worker is still up (idle)');
    const host = server.services.inventory.host(server.services.inventory.allocationOf(done.workerId!)!.hostId)!;
    assert.ok(host.cpuFlavors.includes('cpu3c') && host.gpuTypeId === null, `placed on a CPU host: ${host.id}`);
    assert.deepEqual(
      [
        server.services.inventory.allocationOf(done.workerId!)!.vcpus,
        server.services.inventory.allocationOf(done.workerId!)!.gpuIndices,
      ],
      [2, []],
    );
  });

  test('a worker image that crashes at start is backed off and reported unhealthy, not restarted in a hot loop', async () => {
    const { jobs, autoscaler } = server.services;
    const endpoint = await endpointFor('crashing-worker:dev', { workersMax: 1 });
    const { id } = await jobs.client.submit(endpoint.id, accountId, { input: {} });
    const health = await eventually('the endpoint to be backed off', async () => {
      const h = autoscaler.health(endpoint.id);
      return h.unhealthy > 0 ? h : null;
    });
    assert.equal(health.crashes, 2);
    assert.ok(health.backoffUntil !== null && health.backoffUntil > Date.now());
    assert.match(health.lastCrash ?? '', /code 3/);
    // Passes that would have restarted it (a job waits, no worker runs) hold the start back
    // instead: still 2 crashes, no start decided (no restarts while backed off).
    const { heldBack, starts } = autoscaler.decisions;
    await eventually('two more passes to hold a start back', async () => autoscaler.decisions.heldBack >= heldBack + 2);
    assert.equal(autoscaler.decisions.starts, starts, 'no worker started while backed off');
    assert.equal(autoscaler.health(endpoint.id).crashes, 2);
    assert.equal((await jobs.client.status(accountId, endpoint.id, id)).status, 'IN_QUEUE');
  });

  test('an endpoint whose image the config does not map gets one warning naming the image: its placeholder workers take no jobs', async () => {
    const { jobs } = server.services;
    const endpoint = await endpointFor('unmapped-worker:dev', { workersMax: 1 });
    await jobs.client.submit(endpoint.id, accountId, { input: {} });
    await jobs.client.submit(endpoint.id, accountId, { input: {} });
    const about = () => warnings.filter((w) => w.image === 'unmapped-worker:dev');
    await eventually('a warning about the unmapped image', async () => about().length > 0);
    assert.match(
      about()[0]!.msg,
      /not in the config's images map: its workers run as idle placeholders and take no jobs/,
    );
    assert.equal((await jobs.client.queueStats(endpoint.id)).inQueue, 2, 'nothing took the jobs');
    assert.equal(about().length, 1, 'warned once');
  });
});
