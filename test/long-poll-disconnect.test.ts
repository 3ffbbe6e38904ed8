/**
 * A long-poll whose client hangs up stops waiting at once: its waiter is gone from the signals
 * (nothing piles up while clients come and go), and a job taken for a worker that is no longer
 * there goes back to the queue. Over real HTTP, with real sockets closed by the client.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { RunningServer } from '../src/main.js';
import { startListeningServer, type ListeningServer } from './support/harness.js';
import { until } from './support/eventually.js';

let listening: ListeningServer;
let server: RunningServer;
let key: string;
let endpointId: string;

before(async () => {
  listening = await startListeningServer();
  server = listening.server;
  const { services } = server;
  const account = await services.accounts.createAccount('poller');
  key = (await services.accounts.createKey(account.id, { scope: 'write', rateLimitExempt: true })).key;
  const template = await services.templates.create(account.id, { name: 'w', imageName: 'w:dev', isServerless: true });
  endpointId = (
    await services.endpoints.create(account.id, {
      name: 'lp',
      templateId: template.id,
      gpuIds: 'ADA_24',
      workersMax: 0,
    })
  ).id;
});
after(() => listening?.close());

test('a job-take long-poll ends when its worker hangs up, leaving no waiter behind', async () => {
  const signals = server.services.jobs.signals;
  const hangUp = new AbortController();
  const take = fetch(`${server.url}/v2/${endpointId}/job-take/gone-worker`, {
    headers: { authorization: key },
    signal: hangUp.signal,
  }).catch((e: Error) => e);
  await until('the take to wait', () => signals.waiting('work', endpointId) === 1);
  hangUp.abort();
  assert.equal(((await take) as Error).name, 'AbortError');
  await until('the waiter to go', () => signals.waiting('work', endpointId) === 0);
  // the queue is untouched: a job submitted now stays queued for the next worker
  const run = await fetch(`${server.url}/v2/${endpointId}/run`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: '{"input":{}}',
  });
  const { id } = (await run.json()) as { id: string };
  const status = (await (
    await fetch(`${server.url}/v2/${endpointId}/status/${id}`, { headers: { authorization: `Bearer ${key}` } })
  ).json()) as { status: string };
  assert.equal(status.status, 'IN_QUEUE');
});

test('a status-sync long-poll ends when its client hangs up, leaving no waiter behind', async () => {
  const signals = server.services.jobs.signals;
  const run = await fetch(`${server.url}/v2/${endpointId}/run`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: '{"input":{}}',
  });
  const { id } = (await run.json()) as { id: string };
  const hangUp = new AbortController();
  const poll = fetch(`${server.url}/v2/${endpointId}/status-sync/${id}?wait=60000`, {
    headers: { authorization: `Bearer ${key}` },
    signal: hangUp.signal,
  }).catch((e: Error) => e);
  await until('the status-sync to wait', () => signals.waiting('job', id) === 1);
  hangUp.abort();
  await poll;
  await until('the waiter to go', () => signals.waiting('job', id) === 0);
});

test('closing the server answers open long-polls at once instead of waiting out their 80 s', async () => {
  const other = await startListeningServer();
  const { services } = other.server;
  const account = await services.accounts.createAccount('closing');
  const workerKey = (await services.accounts.createKey(account.id, { scope: 'write' })).key;
  const template = await services.templates.create(account.id, { name: 'w', imageName: 'w:dev', isServerless: true });
  const id = (
    await services.endpoints.create(account.id, { name: 'c', templateId: template.id, gpuIds: 'ADA_24', workersMax: 0 })
  ).id;
  const take = fetch(`${other.server.url}/v2/${id}/job-take/w1`, { headers: { authorization: workerKey } });
  await until('the take to wait', () => services.jobs.signals.waiting('work', id) === 1);
  const closed = other.close().then(() => 'closed');
  const outcome = await Promise.race([
    closed,
    new Promise((r) => setTimeout(() => r('still open after 10 s'), 10_000).unref()),
  ]);
  assert.equal(outcome, 'closed');
  assert.equal((await take).status, 204, 'the worker is told there is no job');
});
