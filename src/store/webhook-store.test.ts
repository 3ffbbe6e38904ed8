import { describe, test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import { openJobStore, type JobStore } from './job-store.js';
import { WebhookStore } from './webhook-store.js';

const T0 = 1_767_225_600_000;
const S = 1_000;

for (const { name, skip } of dialects()) {
  describe(`WebhookStore on ${name}`, { skip }, () => {
    let t: TestDb;
    let store: WebhookStore;
    let jobs: JobStore;
    const enqueue = (id: string, jobId = `job-${id}`, at = T0) =>
      jobs.outbox.insertWebhookDeliveries(
        [{ id, jobId, url: 'http://127.0.0.1:1/hook', payloadJson: JSON.stringify({ id: jobId }) }],
        at,
      );

    before(async () => {
      t = await openTestDb(name);
      store = new WebhookStore(t.db);
      jobs = openJobStore(t.db);
    });
    after(() => t?.cleanup());
    beforeEach(async () => {
      await t.db.kysely.deleteFrom('webhook_deliveries').execute();
    });

    test('claiming a due delivery counts its attempt and leases it so it is not claimed twice', async () => {
      await enqueue('d1');
      const [claimed, ...rest] = await store.claimDue(T0, 10, T0 + 15 * S, 3);
      assert.equal(rest.length, 0);
      assert.equal(claimed?.attempts, 1);
      assert.equal(claimed?.nextAttemptAt, T0 + 15 * S);
      assert.deepEqual(await store.claimDue(T0 + 14 * S, 10, T0 + 30 * S, 3), []);
      // A claim whose outcome was never recorded (the server died) is due again after its lease.
      const again = await store.claimDue(T0 + 15 * S, 10, T0 + 30 * S, 3);
      assert.equal(again[0]?.attempts, 2);
    });

    test('deliveries not yet due, delivered or failed are not claimed', async () => {
      await enqueue('due');
      await enqueue('later', 'job-later', T0 + 60 * S);
      await enqueue('done');
      await enqueue('gone');
      await store.markDelivered('done');
      await store.markFailed('gone', 'boom');
      const claimed = await store.claimDue(T0, 10, T0 + 15 * S, 3);
      assert.deepEqual(
        claimed.map((d) => d.id),
        ['due'],
      );
    });

    test('claims take at most the limit, oldest due first', async () => {
      await enqueue('b', 'job-b', T0 + 2);
      await enqueue('a', 'job-a', T0 + 1);
      await enqueue('c', 'job-c', T0 + 3);
      const first = await store.claimDue(T0 + 10, 2, T0 + 15 * S, 3);
      assert.deepEqual(
        first.map((d) => d.id),
        ['a', 'b'],
      );
    });

    test('a retry is due at its next attempt time and keeps the last error', async () => {
      await enqueue('d1');
      await store.claimDue(T0, 10, T0 + 15 * S, 3);
      await store.markRetry('d1', T0 + 10 * S, 'the receiver answered HTTP 500');
      assert.equal(await store.nextDueAt(), T0 + 10 * S);
      const row = await store.get('d1');
      assert.equal(row?.status, 'PENDING');
      assert.equal(row?.lastError, 'the receiver answered HTTP 500');
      assert.deepEqual(await store.claimDue(T0 + 9 * S, 10, T0 + 30 * S, 3), []);
      assert.equal((await store.claimDue(T0 + 10 * S, 10, T0 + 30 * S, 3)).length, 1);
    });

    test('a delivery whose attempts are spent is never claimed, and fails once its last claim lapses', async () => {
      await enqueue('d1');
      for (let i = 0; i < 3; i++)
        assert.equal((await store.claimDue(T0 + i * 20 * S, 10, T0 + i * 20 * S + 15 * S, 3)).length, 1);
      assert.deepEqual(await store.claimDue(T0 + 100 * S, 10, T0 + 200 * S, 3), []);
      assert.equal(await store.failInterrupted(T0 + 100 * S, 3, 'interrupted'), 1);
      const row = await store.get('d1');
      assert.equal(row?.status, 'FAILED');
      assert.equal(row?.lastError, 'interrupted');
    });

    test('an unclaimed attempt is due again at once and not counted', async () => {
      await enqueue('d1');
      await store.claimDue(T0, 10, T0 + 15 * S, 3);
      await store.unclaim('d1', T0 + 1);
      const row = await store.get('d1');
      assert.equal(row?.attempts, 0);
      assert.equal(row?.nextAttemptAt, T0 + 1);
    });

    test('a finished delivery is not changed by a late outcome', async () => {
      await enqueue('d1');
      await store.markDelivered('d1');
      await store.markRetry('d1', T0 + 10 * S, 'late');
      await store.markFailed('d1', 'late');
      const row = await store.get('d1');
      assert.equal(row?.status, 'DELIVERED');
      assert.equal(row?.lastError, null);
    });

    test('deliveries carry their account and their receiver (the URL origin)', async () => {
      await jobs.outbox.insertWebhookDeliveries(
        [
          {
            id: 'd1',
            jobId: 'j1',
            accountId: 'acct-a',
            url: 'HTTPS://Hooks.Example.com:443/x?token=t',
            payloadJson: '{}',
          },
        ],
        T0,
      );
      const row = await store.get('d1');
      assert.equal(row?.accountId, 'acct-a');
      assert.equal(row?.receiver, 'https://hooks.example.com');
    });

    test('the accounts with due deliveries are listed once each, however long their backlog; not-yet-due and finished ones are not', async () => {
      const rows = (account: string, n: number) =>
        Array.from({ length: n }, (_, i) => ({
          id: `${account}-${i}`,
          jobId: `${account}-j${i}`,
          accountId: account,
          url: 'http://r.test/',
          payloadJson: '{}',
        }));
      await jobs.outbox.insertWebhookDeliveries([...rows('acct-b', 50), ...rows('acct-a', 3)], T0);
      await jobs.outbox.insertWebhookDeliveries(rows('acct-later', 2), T0 + 60 * S);
      await jobs.outbox.insertWebhookDeliveries(rows('acct-done', 1), T0);
      await store.markDelivered('acct-done-0');
      assert.deepEqual(await store.dueAccounts(T0), ['acct-a', 'acct-b']);
      assert.deepEqual(await store.dueAccounts(T0 + 60 * S), ['acct-a', 'acct-b', 'acct-later']);
    });

    test("an account's claim takes its own oldest due deliveries and passes over receivers at their cap", async () => {
      const row = (id: string, accountId: string, url: string) => ({
        id,
        jobId: `job-${id}`,
        accountId,
        url,
        payloadJson: '{}',
      });
      await jobs.outbox.insertWebhookDeliveries(
        [row('a1', 'acct-a', 'http://busy.test/1'), row('b1', 'acct-b', 'http://free.test/1')],
        T0,
      );
      await jobs.outbox.insertWebhookDeliveries(
        [row('a2', 'acct-a', 'http://busy.test/2'), row('a3', 'acct-a', 'http://free.test/3')],
        T0 + 1,
      );
      const claim = (account: string, skipReceivers: string[]) =>
        store.claimDueFor(account, T0 + 10, { limit: 1, leaseUntil: T0 + 15 * S, maxAttempts: 3, skipReceivers });
      assert.deepEqual(
        (await claim('acct-a', ['http://busy.test'])).map((d) => [d.id, d.attempts]),
        [['a3', 1]],
      );
      assert.deepEqual(
        (await claim('acct-a', [])).map((d) => d.id),
        ['a1'],
      );
      assert.deepEqual(
        (await claim('acct-a', ['http://busy.test'])).map((d) => d.id),
        [],
      );
      assert.equal((await store.get('b1'))?.attempts, 0, "another account's delivery is untouched");
    });

    test("a job's deliveries are listed oldest first", async () => {
      await enqueue('second', 'job-x', T0 + 5);
      await enqueue('first', 'job-x', T0);
      await enqueue('other', 'job-y');
      assert.deepEqual(
        (await store.forJob('job-x')).map((d) => d.id),
        ['first', 'second'],
      );
    });

    test('finished deliveries older than the cut-off are purged; pending ones are kept', async () => {
      await enqueue('old-done');
      await enqueue('old-pending');
      await enqueue('new-done', 'job-n', T0 + 100 * S);
      await store.markDelivered('old-done');
      await store.markDelivered('new-done');
      assert.equal(await store.purgeFinished(T0 + 50 * S, 100), 1);
      assert.deepEqual(
        (await t.db.kysely.selectFrom('webhook_deliveries').select('id').orderBy('id').execute()).map((r) => r.id),
        ['new-done', 'old-pending'],
      );
    });
  });
}
