/**
 * `server.jobPort`: a second listener for the job API and the worker protocol only, and
 * `server.publicJobUrl` in the addresses Gantry hands out (requestUrls, worker environments).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { RunningServer } from '../src/main.js';
import { startListeningServer, type ListeningServer } from './support/harness.js';
import { joinBody } from './support/fleet.js';

let listening: ListeningServer;
let server: RunningServer;
let key: string;
let endpointId: string;
const JOB_URL = 'https://jobs.gantry.test';

before(async () => {
  listening = await startListeningServer({ server: { jobPort: 0, publicJobUrl: JOB_URL } });
  server = listening.server;
  const { services } = server;
  const account = await services.accounts.createAccount('jobs-apart');
  key = (await services.accounts.createKey(account.id, { scope: 'write', rateLimitExempt: true })).key;
  const template = await services.templates.create(account.id, { name: 'w', imageName: 'w:dev', isServerless: true });
  endpointId = (
    await services.endpoints.create(account.id, {
      name: 'apart',
      templateId: template.id,
      gpuIds: 'ADA_24',
      workersMax: 0,
    })
  ).id;
});
after(() => listening?.close());

const call = (base: string, method: string, path: string, body?: unknown) =>
  fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

test('the job listener serves the job API and the worker protocol', async () => {
  assert.ok(server.jobUrl && server.jobUrl !== server.url);
  const run = await call(server.jobUrl, 'POST', `/v2/${endpointId}/run`, { input: { n: 1 } });
  assert.equal(run.status, 200);
  const { id } = (await run.json()) as { id: string };
  const take = await fetch(`${server.jobUrl}/v2/${endpointId}/job-take/w1`, { headers: { authorization: key } });
  assert.equal(take.status, 200);
  assert.equal(((await take.json()) as { id: string }).id, id);
  const done = await fetch(`${server.jobUrl}/v2/${endpointId}/job-done/w1/${id}`, {
    method: 'POST',
    headers: { authorization: key },
    body: JSON.stringify({ output: 2 }),
  });
  assert.equal(done.status, 200);
  const status = (await (await call(server.jobUrl, 'GET', `/v2/${endpointId}/status/${id}`)).json()) as {
    status: string;
    output: unknown;
  };
  assert.deepEqual([status.status, status.output], ['COMPLETED', 2]);
  assert.equal((await fetch(`${server.jobUrl}/healthz`)).status, 200);
});

test('management routes answer 404 on the job listener, naming where they are, and keep answering on the main one', async () => {
  const apart = await call(server.jobUrl!, 'GET', '/v2/pods');
  assert.equal(apart.status, 404);
  assert.match(apart.headers.get('content-type') ?? '', /application\/problem\+json/);
  assert.match(
    ((await apart.json()) as { detail: string }).detail,
    new RegExp(
      `GET /v2/pods is not on the job API listener; management routes answer at ${server.services.config.server.publicUrl}`,
    ),
  );
  assert.equal((await call(server.url, 'GET', '/v2/pods')).status, 200);
  assert.equal(
    (await call(server.url, 'POST', `/v2/${endpointId}/run`, { input: {} })).status,
    200,
    'the main listener still serves the job API',
  );
});

test("an endpoint's requestUrls are built on the public job URL", async () => {
  const endpoint = (await (await call(server.url, 'GET', `/v2/serverless/${endpointId}`)).json()) as {
    requestUrls: { run: string; status: string };
  };
  assert.equal(endpoint.requestUrls.run, `${JOB_URL}/v2/${endpointId}/run`);
  assert.equal(endpoint.requestUrls.status, `${JOB_URL}/v2/${endpointId}/status/{job_id}`);
});

test('the agent protocol is served on the job listener too, so an agent may use the workers’ URL', async () => {
  const { token } = await server.services.fleet.createJoinToken();
  const join = await fetch(`${server.jobUrl}/agent/v1/join`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(joinBody(token)),
  });
  assert.equal(join.status, 201);
  const { hostId, credential } = (await join.json()) as { hostId: string; credential: string };
  const op = await server.services.fleet.enqueue(hostId, { kind: 'stop', instanceId: 'pod-1' });
  const poll = await fetch(`${server.jobUrl}/agent/v1/operations?after=0`, {
    headers: { authorization: `Bearer ${credential}` },
  });
  assert.deepEqual(
    ((await poll.json()) as { operations: Array<{ id: string }> }).operations.map((o) => o.id),
    [op.id],
  );
  const report = await fetch(`${server.jobUrl}/agent/v1/report`, {
    method: 'POST',
    headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
    body: '{}',
  });
  assert.equal(report.status, 200);
});
