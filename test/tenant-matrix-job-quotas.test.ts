// A hostile tenant, holding only a write key of its own account, tries to fill the server's disk
// through the job API: endless queued jobs, big inputs, outputs, stream chunks nobody reads, chunks
// kept after a cancel. Each quota refuses it (429 QUOTA_EXCEEDED with Retry-After, the quota named)
// without losing an acknowledged job, and the other tenant's jobs go on.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';
import { FakeClock } from '../src/domain/clock.js';

const quotas = { queuedJobs: 3, storedJobBytes: 4000, streamBytesPerJob: 1000 };
const file = {
  quotas,
  jobs: { takeWaitMs: 100, stopWaitMs: 100 },
  runtime: { process: { allowMultipleAccounts: true } },
};

type Account = { accountId: string; key: string };

for (const dialect of dialects()) {
  describe(`job quotas (${dialect.name})`, { skip: dialect.skip }, () => {
    let t: TestApp;
    let clock: FakeClock;
    before(async () => {
      clock = new FakeClock(Date.now());
      t = await createTestApp({ dialect: dialect.name, clock, file });
    });
    after(() => t?.close());

    /** A fresh account with one queue endpoint: each test starts from an empty quota. */
    const tenant = async (): Promise<Account & { ep: string }> => {
      const account = await t.newAccount();
      const template = await t.services.templates.create(account.accountId, {
        name: 'tpl',
        imageName: 'quota-worker:dev',
        isServerless: true,
      });
      const ep = (
        await t.services.endpoints.create(account.accountId, { name: 'ep', templateId: template.id, gpuIds: 'ADA_24' })
      ).id;
      return { ...account, ep };
    };
    const run = (a: { key: string; ep: string }, input: unknown, op = 'run') =>
      t.request(a.key, 'POST', `/v2/${a.ep}/${op}${op === 'runsync' ? '?wait=1000' : ''}`, { input });
    const worker = (a: { key: string; ep: string }, method: 'GET' | 'POST', path: string, body?: unknown) =>
      t.request(null, method, `/v2/${a.ep}/${path}`, body, { authorization: a.key });
    /** What the next refresh reads: the quotas' stored counters are re-read after a second. */
    const nextRefresh = () => clock.advance(1000);
    const exceeded = (res: LightMyRequestResponse, quota: RegExp) => {
      assert.equal(res.statusCode, 429, res.body);
      assert.match(String(res.headers['content-type']), /application\/problem\+json/);
      assert.equal(res.headers['retry-after'], '1');
      const problem = json(res);
      assert.equal(problem.code, 'QUOTA_EXCEEDED');
      assert.match(problem.detail, quota);
    };
    const usage = async (accountId: string) => {
      const rows = await t.services.db.kysely
        .selectFrom('job_usage')
        .selectAll()
        .where('account_id', '=', accountId)
        .execute();
      return {
        queued: rows.reduce((n, r) => n + Number(r.queued_jobs), 0),
        bytes: rows.reduce((n, r) => n + Number(r.stored_bytes), 0),
      };
    };

    test('a tenant cannot queue jobs past quotas.queuedJobs on /run, /runsync or /openai, while another tenant still can; taken jobs make room again', async () => {
      const a = await tenant();
      const b = await tenant();
      for (let i = 0; i < 3; i++) assert.equal((await run(a, { i })).statusCode, 200);
      exceeded(await run(a, { i: 3 }), /quotas\.queuedJobs = 3/);
      exceeded(await run(a, { i: 3 }, 'runsync'), /quotas\.queuedJobs = 3/);
      exceeded(
        await t.request(a.key, 'POST', `/v2/${a.ep}/openai/v1/chat/completions`, { messages: [] }),
        /quotas\.queuedJobs = 3/,
      );
      assert.equal((await run(b, { i: 0 })).statusCode, 200, 'the quota is per account');
      assert.equal((await usage(a.accountId)).queued, 3, 'no refused job was stored');
      assert.equal((await worker(a, 'GET', 'job-take-batch/w1?batch_size=2')).statusCode, 200);
      nextRefresh();
      assert.equal((await run(a, { i: 4 })).statusCode, 200);
      assert.equal((await run(a, { i: 5 })).statusCode, 200);
      exceeded(await run(a, { i: 6 }), /quotas\.queuedJobs = 3/);
    });

    test('a tenant cannot store job inputs past quotas.storedJobBytes; the refused input is not stored', async () => {
      const a = await tenant();
      assert.equal((await run(a, { blob: 'x'.repeat(2500) })).statusCode, 200);
      exceeded(await run(a, { blob: 'y'.repeat(2000) }), /quotas\.storedJobBytes = 4000/);
      assert.ok((await usage(a.accountId)).bytes < 3000);
      assert.equal((await run(a, { small: 1 })).statusCode, 200, 'what still fits is taken');
    });

    test('stream chunks a job buffers past quotas.streamBytesPerJob are refused with a 4xx, the job goes on and finishes; a drain makes room', async () => {
      const a = await tenant();
      const { id } = json(await run(a, { stream: true }));
      assert.equal((await worker(a, 'GET', 'job-take/w1')).statusCode, 200);
      const chunk = (s: string) => worker(a, 'POST', `job-stream/w1/${id}`, { output: s });
      assert.equal((await chunk('a'.repeat(600))).statusCode, 200);
      exceeded(await chunk('b'.repeat(600)), /quotas\.streamBytesPerJob = 1000/);
      const drained = json(await t.request(a.key, 'GET', `/v2/${a.ep}/stream/${id}`));
      assert.equal(drained.stream.length, 1);
      assert.equal((await chunk('c'.repeat(600))).statusCode, 200);
      assert.equal((await worker(a, 'POST', `job-done/w1/${id}`, { output: 'done' })).statusCode, 200);
      assert.equal(json(await t.request(a.key, 'GET', `/v2/${a.ep}/status/${id}`)).status, 'COMPLETED');
    });

    test('a cancelled job’s stream chunks are deleted with the cancel, and its account is charged for them no more', async () => {
      const a = await tenant();
      const { id } = json(await run(a, { stream: true }));
      const before = (await usage(a.accountId)).bytes;
      assert.equal((await worker(a, 'GET', 'job-take/w1')).statusCode, 200);
      for (const s of ['one', 'two'])
        assert.equal((await worker(a, 'POST', `job-stream/w1/${id}`, { output: s.repeat(100) })).statusCode, 200);
      assert.ok((await usage(a.accountId)).bytes > before + 600);
      assert.equal(json(await t.request(a.key, 'POST', `/v2/${a.ep}/cancel/${id}`)).status, 'CANCELLED');
      const left = await t.services.db.kysely.selectFrom('job_stream').select('seq').where('job_id', '=', id).execute();
      assert.equal(left.length, 0);
      assert.equal((await usage(a.accountId)).bytes, before);
    });

    test('a result that would pass quotas.storedJobBytes is not stored: the job ends FAILED saying so, not left running', async () => {
      const a = await tenant();
      const { id } = json(await run(a, { big: true }));
      assert.equal((await worker(a, 'GET', 'job-take/w1')).statusCode, 200);
      const done = await worker(a, 'POST', `job-done/w1/${id}`, { output: 'z'.repeat(5000) });
      assert.equal(done.statusCode, 200, done.body);
      const status = json(await t.request(a.key, 'GET', `/v2/${a.ep}/status/${id}`));
      assert.equal(status.status, 'FAILED');
      assert.match(status.error, /quotas\.storedJobBytes = 4000/);
      assert.ok((await usage(a.accountId)).bytes < 4000);
    });
  });
}
