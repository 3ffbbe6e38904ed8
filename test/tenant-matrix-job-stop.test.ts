// The job-stop channel across tenants: account B learns the id of account A's worker (job replies
// carry `workerId`), runs a worker of its own endpoint under that id and cancels its own job. A
// worker is (endpoint, worker id): B's cancel must not wake A's worker's job-stop long-poll — on
// this replica or, through the relay, on another — and A's own cancel still reaches it at once.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';
import { FakeClock } from '../src/domain/clock.js';
import { stopKey } from '../src/jobs/job-signals.js';

/** Lets whatever a wake-up set going run: a woken poll re-reads its stop requests within these turns. */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

for (const { name, skip } of dialects()) {
  describe(`the job-stop channel of a worker id another account also uses, on ${name}`, { skip }, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({
        dialect: name,
        clock: new FakeClock(Date.UTC(2026, 0, 1)),
        file: { jobs: { takeWaitMs: 20, stopWaitMs: 60_000 } },
      });
    });
    after(() => t?.close());

    const endpointOf = async (accountId: string) => {
      const template = await t.services.templates.create(accountId, {
        name: `tpl-${Math.random()}`,
        imageName: 'worker:dev',
        isServerless: true,
      });
      return (await t.services.endpoints.create(accountId, { name: 'ep', templateId: template.id, gpuIds: 'ADA_24' }))
        .id;
    };
    /** A job of the endpoint, taken by `workerId`. */
    const running = async (key: string, ep: string, workerId: string) => {
      const id = json(await t.request(key, 'POST', `/v2/${ep}/run`, { input: {} })).id as string;
      const taken = await t.request(null, 'GET', `/v2/${ep}/job-take/${workerId}?job_in_progress=0`, undefined, {
        authorization: key,
      });
      assert.equal(json(taken).id, id, taken.body);
      return id;
    };

    test("a cancel on B's endpoint never wakes A's worker's job-stop long-poll, A's cancel does", async () => {
      const a = await t.newAccount('tenant-a');
      const b = await t.newAccount('tenant-b');
      const epA = await endpointOf(a.accountId);
      const epB = await endpointOf(b.accountId);
      const jobA = await running(a.key, epA, 'w1');
      const jobB = await running(b.key, epB, 'w1'); // B's worker, under A's worker's id

      const store = t.services.jobs.store.claims;
      const reads: string[] = [];
      const takeStopRequests = store.takeStopRequests.bind(store);
      store.takeStopRequests = (workerId, endpointId, ...rest) => {
        reads.push(endpointId);
        return takeStopRequests(workerId, endpointId, ...rest);
      };
      const poll = t.request(null, 'GET', `/v2/${epA}/job-stop/w1`, undefined, { authorization: a.key });
      while (t.services.jobs.signals.waiting('stop', stopKey(epA, 'w1')) === 0)
        await new Promise((r) => setImmediate(r));
      assert.deepEqual(reads, [epA]);

      assert.equal(json(await t.request(b.key, 'POST', `/v2/${epB}/cancel/${jobB}`)).status, 'CANCELLED');
      await settle();
      assert.deepEqual(reads, [epA], "B's cancel did not wake A's poll (a woken poll reads its stop requests again)");

      assert.equal(json(await t.request(a.key, 'POST', `/v2/${epA}/cancel/${jobA}`)).status, 'CANCELLED');
      const answered = await poll;
      assert.equal(answered.statusCode, 200, answered.body);
      assert.deepEqual(json(answered), { jobsToStop: [jobA] });
    });
  });
}
