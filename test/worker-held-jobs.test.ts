// Jobs a worker no longer holds (docs/serverless.md): a worker's own take (`job_in_progress=0`) or
// ping (`job_id` list) showing it no longer holds a job the store gives it sends that job back to
// the queue, counted as a retry, as a lost worker's. Driven over in-process HTTP with the Python
// SDK's wire habits (raw key, `&job_in_progress=` appended to the take URL, `job_id` left out of
// the ping when it holds nothing, `runpod_version` always, results as form-urlencoded JSON), on a
// manual clock, on both stores.
import { describe, test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';
import { FakeClock } from '../src/domain/clock.js';
import { WORKER_LOST_ERROR } from '../src/domain/job-state.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const SDK_VERSION = '1.12.0';
const HEARTBEAT_TIMEOUT = 30_000;

for (const { name, skip } of dialects()) {
  describe(`jobs a worker no longer holds, on ${name}`, { skip }, () => {
    let t: TestApp;
    let clock: FakeClock;
    let acct: { accountId: string; key: string };
    let ep: string;

    const call = (method: 'GET' | 'POST', path: string, body?: unknown) =>
      t.request(null, method, `/v2/${ep}/${path}`, body === undefined ? undefined : JSON.stringify(body), {
        authorization: acct.key,
        ...(body === undefined ? {} : FORM),
      });
    const submit = async (input: Record<string, unknown> = {}): Promise<string> => {
      const res = await t.request(acct.key, 'POST', `/v2/${ep}/run`, { input });
      assert.equal(res.statusCode, 200, res.body);
      return json(res).id;
    };
    const status = async (id: string) => json(await t.request(acct.key, 'GET', `/v2/${ep}/status/${id}`));
    /** The SDK's take: its URL from the platform, `&job_in_progress=` appended; a batch when it wants more than one. */
    const take = async (worker: string, holds: boolean, batch = 1): Promise<string[]> => {
      const path =
        batch > 1
          ? `job-take-batch/${worker}?gpu=ADA_24&batch_size=${batch}&job_in_progress=${holds ? 1 : 0}`
          : `job-take/${worker}?gpu=ADA_24&job_in_progress=${holds ? 1 : 0}`;
      const res = await call('GET', path);
      if (res.statusCode === 204) return [];
      assert.equal(res.statusCode, 200, res.body);
      const body = json(res);
      return (Array.isArray(body) ? body : [body]).map((j: { id: string }) => j.id);
    };
    /** The SDK's heartbeat: the ids it holds (the `job_id` parameter left out when none), its version. */
    const ping = async (worker: string, held: readonly string[]) => {
      const q = held.length ? `job_id=${encodeURIComponent(held.join(','))}&` : '';
      const res = await call('GET', `ping/${worker}?${q}runpod_version=${SDK_VERSION}`);
      assert.equal(res.statusCode, 200, res.body);
    };
    const done = (worker: string, id: string, output: unknown) =>
      call('POST', `job-done/${worker}/${id}?gpu=ADA_24&isStream=false`, { output });

    before(async () => {
      clock = new FakeClock(Date.UTC(2026, 0, 1));
      t = await createTestApp({
        dialect: name,
        clock,
        file: {
          jobs: { takeWaitMs: 20, stopWaitMs: 20, heartbeatTimeoutMs: HEARTBEAT_TIMEOUT, retryBudget: 1 },
        },
      });
      acct = await t.newAccount('restarts');
    });
    after(() => t?.close());
    beforeEach(async () => {
      const template = await t.services.templates.create(acct.accountId, {
        name: `tpl-${Math.random()}`,
        imageName: 'worker:dev',
        isServerless: true,
      });
      ep = (
        await t.services.endpoints.create(acct.accountId, { name: 'ep', templateId: template.id, gpuIds: 'ADA_24' })
      ).id;
    });

    test('a worker restarted under the same id: its first take puts back the job it held, as a retry, and takes it again', async () => {
      const id = await submit({ n: 1 });
      assert.deepEqual(await take('pod-1', false), [id]);
      await ping('pod-1', [id]);
      clock.advance(5_000);
      // killed -9 mid-job; the container comes back with the same pod id and asks for work
      assert.deepEqual(await take('pod-1', false), [id], 'back in the queue at its place, and taken at once');
      const running = await status(id);
      assert.deepEqual([running.status, running.workerId, running.retries], ['IN_PROGRESS', 'pod-1', 1]);
      assert.deepEqual(json(await done('pod-1', id, { ok: 1 })), { id, status: 'COMPLETED', accepted: true });
      const view = await status(id);
      assert.deepEqual([view.status, view.output, view.retries], ['COMPLETED', { ok: 1 }, 1]);
    });

    test('a take from a Python SDK older than 1.7.6, which could say job_in_progress=0 while holding a job, gives nothing back', async () => {
      const id = await submit();
      assert.deepEqual(await take('pod-old', false), [id]);
      const sdk = (version: string) => ({
        authorization: acct.key,
        'user-agent': `RunPod-Python-SDK/${version} (Linux 6.1.0; x86_64) Language/Python 3.10.12`,
      });
      const old = await t.request(null, 'GET', `/v2/${ep}/job-take/pod-old?job_in_progress=0`, undefined, sdk('1.7.5'));
      assert.equal(old.statusCode, 204);
      assert.deepEqual([(await status(id)).status, (await status(id)).retries], ['IN_PROGRESS', 0]);
      const current = await t.request(
        null,
        'GET',
        `/v2/${ep}/job-take/pod-old?job_in_progress=0`,
        undefined,
        sdk('1.7.6'),
      );
      assert.equal(json(current).id, id, 'from 1.7.6 on, its word counts');
      assert.equal((await status(id)).retries, 1);
    });

    test('a take saying the worker holds a job gives nothing back, and neither does a take that does not say', async () => {
      const [a, b] = [await submit(), await submit()];
      assert.deepEqual(await take('pod-2', false), [a]);
      assert.deepEqual(await take('pod-2', true), [b]);
      assert.equal((await call('GET', 'job-take/pod-2?gpu=ADA_24')).statusCode, 204);
      for (const id of [a, b]) {
        const view = await status(id);
        assert.deepEqual([view.status, view.retries], ['IN_PROGRESS', 0], id);
      }
    });

    test("a restarted worker's pings, listing no job, put back a job it took more than the heartbeat timeout ago, and leave one taken since", async () => {
      const [old, fresh] = [await submit(), await submit()];
      assert.deepEqual(await take('pod-3', false), [old]);
      clock.advance(HEARTBEAT_TIMEOUT);
      await ping('pod-3', []);
      assert.equal(
        (await status(old)).status,
        'IN_PROGRESS',
        'taken exactly one heartbeat timeout ago: it may be on its way',
      );
      clock.advance(1);
      assert.deepEqual(
        await take('pod-3', true),
        [fresh],
        'a take saying it holds one (its memory survived) moves nothing',
      );
      await ping('pod-3', []);
      const back = await status(old);
      assert.deepEqual([back.status, back.retries, back.workerId], ['IN_QUEUE', 1, undefined]);
      assert.equal((await status(fresh)).status, 'IN_PROGRESS', 'taken just now: never put back by a ping');
    });

    test('a ping built before a take and arriving after it never puts back the job just taken', async () => {
      const [a, b] = [await submit(), await submit()];
      const builtEmpty: string[] = []; // the heartbeat's snapshot before the first take
      assert.deepEqual(await take('pod-4', false), [a]);
      const builtWithA = [a]; // its snapshot after the first take, before the second
      clock.advance(2_000);
      assert.deepEqual(await take('pod-4', true, 2), [b]);
      clock.advance(HEARTBEAT_TIMEOUT - 2_000);
      await ping('pod-4', builtEmpty);
      await ping('pod-4', builtWithA);
      for (const id of [a, b]) {
        const view = await status(id);
        assert.deepEqual([view.status, view.workerId, view.retries], ['IN_PROGRESS', 'pod-4', 0], id);
      }
    });

    test('a ping listing a job shows a job of an earlier take it leaves out no longer held; the late result for it is refused', async () => {
      const [a, b, c] = [await submit(), await submit(), await submit()];
      assert.deepEqual(await take('pod-5', false), [a]);
      clock.advance(1_000);
      assert.deepEqual(await take('pod-5', true, 2), [b, c]);
      // the worker gave up on `a` (its result post failed three times) and listed one job of the batch so far
      await ping('pod-5', [b]);
      const back = await status(a);
      assert.deepEqual([back.status, back.retries], ['IN_QUEUE', 1]);
      assert.equal((await status(c)).status, 'IN_PROGRESS', 'the same take as a listed job: never judged by it');
      const late = json(await done('pod-5', a, 'late'));
      assert.equal(late.accepted, false);
      const after = await status(a);
      assert.deepEqual([after.status, after.output], ['IN_QUEUE', undefined]);
    });

    test("a job handed out while the worker's event loop is blocked stays its, however long its pings leave it out", async () => {
      const [running, waiting] = [await submit(), await submit()];
      assert.deepEqual(await take('pod-9', false), [running]);
      // A blocking handler runs `running`; the take for the second slot is answered meanwhile, but
      // the SDK records `waiting` only when the handler returns. Its heartbeat pings on.
      assert.deepEqual(await take('pod-9', true, 2), [waiting]);
      for (let i = 0; i < 10; i++) {
        clock.advance(HEARTBEAT_TIMEOUT / 2);
        await ping('pod-9', [running]);
      }
      assert.deepEqual([(await status(waiting)).status, (await status(waiting)).retries], ['IN_PROGRESS', 0]);
      assert.deepEqual(json(await done('pod-9', running, 1)).accepted, true);
      await ping('pod-9', [waiting]);
      assert.deepEqual(json(await done('pod-9', waiting, 2)).accepted, true);
    });

    test('a result on its way and a take saying the worker holds none: one of them applies, the job is never lost', async () => {
      for (let round = 0; round < 6; round++) {
        const id = await submit({ round });
        assert.deepEqual(await take(`pod-6-${round}`, false), [id]);
        const [posted, next] = await Promise.all([
          done(`pod-6-${round}`, id, { round }),
          take(`pod-6-${round}`, false),
        ]);
        const answer = json(posted);
        const view = await status(id);
        if (answer.accepted) {
          // Applied first, or after the take put the job back and took it again for the same
          // worker id (the result of the same job from the same worker id stands for the rerun's).
          assert.deepEqual([view.status, view.output], ['COMPLETED', { round }]);
          assert.deepEqual(next, view.retries === 1 ? [id] : []);
        } else {
          assert.deepEqual(next, [id], 'given back, then taken again by the same take');
          assert.deepEqual([view.status, view.output, view.retries], ['IN_PROGRESS', undefined, 1]);
        }
        const again = json(await done(`pod-6-${round}`, id, { round, again: true }));
        assert.equal(again.accepted, !answer.accepted, 'one result, applied once');
      }
    });

    test("past the retry budget, a restarted worker's job FAILS as a lost worker's", async () => {
      const id = await submit();
      assert.deepEqual(await take('pod-7', false), [id]);
      assert.deepEqual(await take('pod-7', false), [id], 'first restart: retried');
      assert.deepEqual(await take('pod-7', false), [], 'second restart: the budget (1 here) is spent');
      const view = await status(id);
      assert.deepEqual([view.status, view.error, view.retries], ['FAILED', WORKER_LOST_ERROR, 1]);
    });

    test('pings that say nothing of jobs — bare, or with a repeated job_id — put nothing back', async () => {
      const id = await submit();
      assert.deepEqual(await take('pod-8', false), [id]);
      clock.advance(10 * HEARTBEAT_TIMEOUT);
      assert.equal((await call('GET', 'ping/pod-8')).statusCode, 200);
      assert.equal((await call('GET', 'ping/pod-8?job_id=x&job_id=y&runpod_version=1')).statusCode, 200);
      assert.equal((await status(id)).status, 'IN_PROGRESS');
      await ping('pod-8', ['not-held-by-it']);
      assert.equal((await status(id)).status, 'IN_PROGRESS', 'listing only jobs it does not hold proves nothing');
      await ping('pod-8', []);
      assert.equal((await status(id)).status, 'IN_QUEUE');
    });
  });
}
