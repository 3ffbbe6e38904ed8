import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import pino from 'pino';
import { FakeClock } from '../domain/clock.js';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import { FleetJournal, GAP_WAIT_MS, JOURNAL_RETENTION_MS, type JournalEntry } from './fleet-journal.js';

const report = (id: string): JournalEntry => ({
  t: 'report',
  full: false,
  items: [
    { id, owner: { kind: 'pod', accountId: 'acct-1' }, state: 'running', startedAt: 1, exitCode: null, reason: null },
  ],
});
const idsOf = (records: Array<{ entry: JournalEntry }>) =>
  records.map((r) => (r.entry.t === 'report' ? r.entry.items[0]!.id : r.entry.t));

for (const { name, skip } of dialects()) {
  describe(`the fleet journal on ${name}`, { skip }, () => {
    let t: TestDb;
    const clock = new FakeClock(1_000_000);
    const logger = pino({ level: 'silent' });
    let published = 0;
    const journal = (origin: string) =>
      new FleetJournal({ db: t.db, origin, clock, logger, publish: () => void published++ });
    /** A row written as another replica would, with the given seq (a late commit). */
    const insertAt = async (seq: number, id: string) => {
      await t.db.kysely
        .insertInto('fleet_journal')
        .values({
          seq,
          host_id: 'host-1',
          origin: 'other',
          entry: JSON.stringify(report(id)),
          at: clock.now(),
        })
        .execute();
      // PostgreSQL's sequence does not move for a given seq: later appends must not collide with it.
      if (name === 'postgres')
        await sql`SELECT setval(pg_get_serial_sequence('fleet_journal', 'seq'), (SELECT max(seq) FROM fleet_journal))`.execute(
          t.db.kysely,
        );
    };
    const maxSeq = async () =>
      Number(
        (
          await t.db.kysely
            .selectFrom('fleet_journal')
            .select((eb) => eb.fn.max('seq').as('m'))
            .executeTakeFirst()
        )?.m ?? 0,
      );

    before(async () => {
      t = await openTestDb(name);
    });
    after(async () => {
      await t?.cleanup();
    });

    test('a replica reads the entries of the others in the order they were appended, never its own', async () => {
      const a = journal('replica-a');
      const b = journal('replica-b');
      await a.start();
      await b.start();
      b.append('host-1', report('from-b-1'));
      a.append('host-1', report('from-a'));
      await a.flush();
      b.append('host-1', report('from-b-2'));
      await b.flush();
      const onA = await a.read();
      assert.deepEqual(idsOf(onA.records), ['from-b-1', 'from-b-2']);
      assert.equal(onA.more, false);
      assert.deepEqual(idsOf((await b.read()).records), ['from-a']);
      assert.deepEqual((await a.read()).records, [], 'nothing is read twice');
      assert.ok(published >= 2, 'the others are told');
    });

    test('a replica starts reading after what was there when it started', async () => {
      const a = journal('replica-a');
      a.append('host-1', report('before'));
      await a.flush();
      const late = journal('replica-late');
      await late.start();
      a.append('host-1', report('after'));
      await a.flush();
      assert.deepEqual(idsOf((await late.read()).records), ['after']);
    });

    test('an entry that commits after a later one is still read, once', async () => {
      const reader = journal('reader');
      await reader.start();
      const next = (await maxSeq()) + 1;
      await insertAt(next + 1, 'second');
      assert.deepEqual(idsOf((await reader.read()).records), ['second']);
      await insertAt(next, 'first-committed-late');
      assert.deepEqual(idsOf((await reader.read()).records), ['first-committed-late']);
      assert.deepEqual((await reader.read()).records, []);
    });

    test('a missing entry is waited for only so long (a rolled-back insert never comes)', async () => {
      const reader = journal('reader-2');
      await reader.start();
      const next = (await maxSeq()) + 1;
      await insertAt(next + 1, 'after-a-gap');
      assert.equal((await reader.read()).records.length, 1);
      clock.advance(GAP_WAIT_MS + 1);
      await reader.read();
      await insertAt(next, 'too-late');
      assert.deepEqual((await reader.read()).records, [], 'given up on');
    });

    test('entries older than the retention are pruned', async () => {
      const a = journal('replica-a');
      a.append('host-1', report('old'));
      await a.flush();
      clock.advance(JOURNAL_RETENTION_MS + 1);
      a.append('host-1', report('new'));
      await a.flush();
      assert.ok((await a.prune()) >= 1);
      const left = await t.db.kysely.selectFrom('fleet_journal').select('entry').execute();
      assert.deepEqual(
        left.map((r) => (JSON.parse(r.entry) as Extract<JournalEntry, { t: 'report' }>).items[0]!.id),
        ['new'],
      );
    });
  });
}
