import { stopKey } from '../jobs/job-signals.js';
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { openTestDb, postgresUrl, type TestDb } from '../../test/support/harness.js';
import type { Session, Sessions } from './database.js';
import { decodePayload, encodePayloads, PostgresNotifyRelay, relayChannel, type RelayTarget } from './notify-relay.js';

async function eventually(what: string, cond: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`never happened within ${timeoutMs} ms: ${what}`);
}

test('payloads stay under the size limit, splitting entries between them, and decode to what was encoded', () => {
  const entries: Array<[string, string, number]> = Array.from({ length: 500 }, (_, i) => [
    'work',
    `endpoint-${i}`,
    i + 1,
  ]);
  entries.push(['job', 'all-waiters', Number.POSITIVE_INFINITY]);
  const payloads = encodePayloads('me', entries, 1_000);
  assert.ok(payloads.length > 1);
  for (const p of payloads) assert.ok(Buffer.byteLength(p) <= 1_000, `${Buffer.byteLength(p)} bytes`);
  const decoded = payloads.flatMap((p) => decodePayload(p)!.m!);
  assert.deepEqual(decoded.slice(0, 500), entries.slice(0, 500));
  // "every waiter" travels as 0.
  assert.deepEqual(decoded[500], ['job', 'all-waiters', 0]);
  assert.equal(decodePayload(payloads[0]!)!.o, 'me');
});

test('a payload of another format is ignored', () => {
  assert.equal(decodePayload('not json'), null);
  assert.equal(decodePayload('{"v":99,"o":"x","m":[]}'), null);
  assert.deepEqual(decodePayload('{"v":1,"o":"x","m":[["work","k",-1],["work","k",2]]}')!.m, [['work', 'k', 2]]);
});

test('a channel name fits a PostgreSQL identifier even for a long namespace', () => {
  assert.equal(relayChannel('t_abc'), 'gantry_t_abc');
  assert.ok(relayChannel('x'.repeat(63)).length <= 63);
  assert.notEqual(relayChannel(`${'x'.repeat(60)}a`), relayChannel(`${'x'.repeat(60)}b`));
});

/** Records what a replica's relay delivers. */
class Recorder implements RelayTarget {
  readonly delivered: Array<[string, string, number]> = [];
  wokenAll = 0;
  deliver(topic: string, key: string, count: number): void {
    this.delivered.push([topic, key, count]);
  }
  wakeAll(): void {
    this.wokenAll++;
  }
}

describe('PostgresNotifyRelay', { skip: postgresUrl() ? false : 'GANTRY_TEST_DATABASE_URL is not set' }, () => {
  let t: TestDb;
  const relays: PostgresNotifyRelay[] = [];
  const replica = (namespace?: string): { relay: PostgresNotifyRelay; seen: Recorder; sessions: Session[] } => {
    const opened: Session[] = [];
    const sessions: Sessions = {
      namespace: namespace ?? t.db.sessions!.namespace,
      open: async () => {
        const s = await t.db.sessions!.open();
        opened.push(s);
        return s;
      },
    };
    const relay = new PostgresNotifyRelay({ sessions });
    const seen = new Recorder();
    relay.deliverTo(seen);
    relays.push(relay);
    return { relay, seen, sessions: opened };
  };

  before(async () => {
    t = await openTestDb('postgres');
  });
  after(async () => {
    for (const r of relays) await r.close();
    await t?.cleanup();
  });

  test("a notification published on one replica reaches the others, but not the sender's own waiters again", async () => {
    const a = replica();
    const b = replica();
    const c = replica();
    await Promise.all([a.relay.start(), b.relay.start(), c.relay.start()]);
    a.relay.publish('work', 'ep1', 1);
    a.relay.publish('job', 'job1', Number.POSITIVE_INFINITY);
    await a.relay.flush();
    await eventually('b and c receive both', () => b.seen.delivered.length === 2 && c.seen.delivered.length === 2);
    assert.deepEqual(b.seen.delivered, [
      ['work', 'ep1', 1],
      ['job', 'job1', Number.POSITIVE_INFINITY],
    ]);
    // A round trip from b proves a had time to receive its own notification, and ignored it.
    // a stop key (endpoint NUL worker id) crosses intact: PostgreSQL text holds no NUL, the JSON payload escapes it
    b.relay.publish('stop', stopKey('ep1', 'w1'), 1);
    await b.relay.flush();
    await eventually('a receives b', () => a.seen.delivered.length === 1);
    assert.deepEqual(a.seen.delivered, [['stop', 'ep1\u0000w1', 1]]);
  });

  test('notifications of one turn of the event loop are coalesced per key, counts added', async () => {
    const a = replica();
    const b = replica();
    await Promise.all([a.relay.start(), b.relay.start()]);
    for (let i = 0; i < 100; i++) a.relay.publish('work', 'ep1', 1);
    for (let i = 0; i < 100; i++) a.relay.publish('job', `job${i}`, Number.POSITIVE_INFINITY);
    await a.relay.flush();
    await eventually('b receives them', () => b.seen.delivered.length === 101);
    assert.deepEqual(b.seen.delivered[0], ['work', 'ep1', 100]);
  });

  test('replicas of another namespace (schema) hear nothing', async () => {
    const a = replica();
    const other = replica(`${t.db.sessions!.namespace}_x`);
    const b = replica();
    await Promise.all([a.relay.start(), other.relay.start(), b.relay.start()]);
    a.relay.publish('work', 'ep1', 1);
    await a.relay.flush();
    await eventually('b receives it', () => b.seen.delivered.length === 1);
    assert.deepEqual(other.seen.delivered, []);
  });

  test('a replica whose connection dropped reconnects and has every waiter, here and elsewhere, re-read the database', async () => {
    const a = replica();
    const b = replica();
    await Promise.all([a.relay.start(), b.relay.start()]);
    await sql`SELECT pg_terminate_backend(${b.sessions[0]!.pid})`.execute(t.db.kysely);
    await eventually('b reconnects and wakes its waiters', () => b.seen.wokenAll === 1 && b.sessions.length === 2);
    await eventually('a is told to wake its waiters', () => a.seen.wokenAll === 1);
    a.relay.publish('work', 'ep2', 1);
    await a.relay.flush();
    await eventually('b hears a again', () => b.seen.delivered.length === 1);
  });
});
