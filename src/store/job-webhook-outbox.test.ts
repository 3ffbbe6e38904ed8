import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeJobStore, T0 } from '../../test/support/job-store-suite.js';

describeJobStore('JobWebhookOutbox', (s) => {
  test('webhook deliveries are written to the outbox as due now', async () => {
    await s.store.outbox.insertWebhookDeliveries([{ id: 'd1', jobId: 'j1', url: 'http://x', payloadJson: '{}' }], T0);
    const row = await s.t.db.kysely.selectFrom('webhook_deliveries').selectAll().executeTakeFirstOrThrow();
    assert.deepEqual([row.status, Number(row.next_attempt_at), row.attempts], ['PENDING', T0, 0]);
  });
});
