import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { describeJobStore, newJob, T0 } from '../../test/support/job-store-suite.js';
import { Metrics } from './metrics.js';

const TOKEN = 'unit-metrics-token-0123456789';

const gauge = async (metrics: Metrics, name: string, endpoint: string): Promise<number> => {
  const line = (await metrics.render()).split('\n').find((l) => l.startsWith(`${name}{endpoint="${endpoint}"}`));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
};

describeJobStore('The metrics gauges read from the store', (s) => {
  const metricsOver = (refreshJobs: boolean) =>
    new Metrics({ db: s.t.db, logger: pino({ level: 'silent' }), token: TOKEN, refreshMs: 0, refreshJobs });

  test('the first read counts queued and running jobs per endpoint from the store', async () => {
    await s.store.rows.insertMany([newJob(), newJob(), newJob(), newJob({ endpointId: 'ep2' })]);
    await s.store.claims.takeNext('ep1', 'w1', 1, T0);
    const metrics = metricsOver(false);
    await metrics.start();
    assert.equal(await gauge(metrics, 'gantry_jobs_queued', 'ep1'), 2);
    assert.equal(await gauge(metrics, 'gantry_jobs_in_progress', 'ep1'), 1);
    assert.equal(await gauge(metrics, 'gantry_jobs_queued', 'ep2'), 1);
    await metrics.stop();
  });

  test('a refresh re-reads the job counts where replicas move jobs, and leaves them to the job flow where one process does', async () => {
    await s.store.rows.insertMany([newJob()]);
    const shared = metricsOver(true);
    const single = metricsOver(false);
    await shared.start();
    await single.start();
    // another replica (here: the store directly) queues two more
    await s.store.rows.insertMany([newJob(), newJob()]);
    await shared.refresh();
    await single.refresh();
    assert.equal(await gauge(shared, 'gantry_jobs_queued', 'ep1'), 3);
    assert.equal(await gauge(single, 'gantry_jobs_queued', 'ep1'), 1);
    await single.refresh({ jobs: true });
    assert.equal(await gauge(single, 'gantry_jobs_queued', 'ep1'), 3);
  });

  test('the metrics token matches only itself, whatever the length presented', () => {
    const metrics = metricsOver(false);
    assert.equal(metrics.tokenMatches(TOKEN), true);
    for (const other of ['', 'x', TOKEN.slice(0, -1), `${TOKEN}x`, TOKEN.toUpperCase()])
      assert.equal(metrics.tokenMatches(other), false, other);
  });
});
