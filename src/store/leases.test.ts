import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { openTestDb, postgresUrl, type TestDb } from '../../test/support/harness.js';
import type { Session, Sessions } from './database.js';
import { hash32, heldLease, leaseKey, LocalLeases, PostgresLeases } from './leases.js';

/** Waits (briefly, real time) until `cond` holds: for events PostgreSQL delivers on its own schedule. */
async function eventually(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`never happened within ${timeoutMs} ms: ${what}`);
}

test('on SQLite every lease is always held, from the start', async () => {
  const t = await openTestDb('sqlite');
  try {
    assert.equal(t.db.sessions, undefined);
    const leases = new LocalLeases();
    await leases.start();
    const lease = leases.lease('timekeeper');
    assert.equal(lease.isHeld(), true);
    assert.equal(await lease.renew(), true);
    assert.equal(leases.lease('timekeeper'), lease);
    assert.equal(heldLease('autoscaler').isHeld(), true);
    await leases.close();
  } finally {
    await t.cleanup();
  }
});

test('a released local lease is held again once acquired, in a new term', async () => {
  const lease = new LocalLeases().lease('pods');
  const term = lease.term;
  await lease.release();
  assert.equal(lease.isHeld(), false);
  assert.equal(await lease.acquire(), true);
  assert.equal(lease.term, term + 1);
});

test('lease keys differ by namespace and by name', () => {
  assert.notDeepEqual(leaseKey('s1', 'timekeeper'), leaseKey('s2', 'timekeeper'));
  assert.notDeepEqual(leaseKey('s1', 'timekeeper'), leaseKey('s1', 'autoscaler'));
  assert.equal(hash32(''), 0x811c9dc5);
  assert.ok(hash32('gantry') >= 0 && hash32('gantry') <= 0xffffffff);
});

describe('PostgresLeases', { skip: postgresUrl() ? false : 'GANTRY_TEST_DATABASE_URL is not set' }, () => {
  let t: TestDb;
  /** Sessions each replica opened, remembered so a test can cut one. */
  const opened = new Map<PostgresLeases, Session[]>();
  const replicas: PostgresLeases[] = [];
  const replica = (namespace?: string): PostgresLeases => {
    const mine: Session[] = [];
    const sessions: Sessions = {
      namespace: namespace ?? t.db.sessions!.namespace,
      open: async () => {
        const s = await t.db.sessions!.open();
        mine.push(s);
        return s;
      },
    };
    const leases = new PostgresLeases({ sessions, renewIntervalMs: 50 });
    opened.set(leases, mine);
    replicas.push(leases);
    return leases;
  };
  /** Ends a session from the server side, as a crash or a network cut would. */
  const terminate = async (pid: number): Promise<void> => {
    await sql`SELECT pg_terminate_backend(${pid})`.execute(t.db.kysely);
  };

  before(async () => {
    t = await openTestDb('postgres');
  });
  after(async () => {
    for (const r of replicas) await r.close();
    await t?.cleanup();
  });

  test('of two replicas wanting the same lease exactly one holds it', async () => {
    const a = replica();
    const b = replica();
    const [la, lb] = [a.lease('timekeeper'), b.lease('timekeeper')];
    const [ha, hb] = await Promise.all([la.acquire(), lb.acquire()]);
    assert.equal(Number(ha) + Number(hb), 1);
    assert.equal(la.isHeld(), ha);
    assert.equal(lb.isHeld(), hb);
    // Renewing changes nothing: the holder keeps it, the other still cannot take it.
    assert.equal(await la.renew(), ha);
    assert.equal(await lb.renew(), hb);
    await a.close();
    await b.close();
  });

  test('different lease names and different namespaces do not exclude each other', async () => {
    const a = replica();
    const b = replica();
    const c = replica(`${t.db.sessions!.namespace}_other`);
    assert.equal(await a.lease('autoscaler').acquire(), true);
    assert.equal(await b.lease('webhooks').acquire(), true);
    assert.equal(await c.lease('autoscaler').acquire(), true);
    assert.equal(await b.lease('autoscaler').acquire(), false);
    await Promise.all([a.close(), b.close(), c.close()]);
  });

  test("when the holder's connection drops it loses the lease and the other replica takes it", async () => {
    const a = replica();
    const b = replica();
    const la = a.lease('webhooks');
    const lb = b.lease('webhooks');
    await a.start();
    await b.start();
    assert.equal(la.isHeld(), true);
    assert.equal(lb.isHeld(), false);
    const termBefore = lb.term;
    await terminate(opened.get(a)!.at(-1)!.pid);
    await eventually('the holder notices its connection ended', () => !la.isHeld());
    // The other replica's renewal loop takes it over on its own.
    await eventually('the other replica holds the lease', () => lb.isHeld());
    assert.equal(lb.term, termBefore + 1);
    // The old holder reconnects, and now waits its turn.
    assert.equal(await la.renew(), false);
    await a.close();
    await b.close();
  });

  test('a released lease can be taken by another replica; closing gives every lease up', async () => {
    const a = replica();
    const b = replica();
    const la = a.lease('pods');
    const la2 = a.lease('autoscaler');
    assert.equal(await la.acquire(), true);
    assert.equal(await la2.acquire(), true);
    await la.release();
    assert.equal(la.isHeld(), false);
    assert.equal(await b.lease('pods').acquire(), true);
    // Released means no longer wanted: the renewal loop does not take it back.
    await a.renewAll();
    assert.equal(la.isHeld(), false);
    assert.equal(await b.lease('autoscaler').acquire(), false);
    await a.close();
    assert.equal(la2.isHeld(), false);
    assert.equal(await b.lease('autoscaler').acquire(), true);
    await b.close();
  });
});
