// GET /v2/{endpointId}/requests: the endpoint's recent jobs (spec 4.4 names the route; 8.1 its limits).
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, json, type TestApp } from './support/harness.js';
import { FakeClock, iso } from '../src/domain/clock.js';

let t: TestApp;
const clock = new FakeClock(Date.UTC(2026, 0, 1));
let acct: { accountId: string; key: string; readKey: string };
let other: { accountId: string; key: string; readKey: string };
/** One answer of the route. */
type Page = {
  requests: Array<{
    id: string;
    status: string;
    createdAt: string;
    delayTime?: number;
    executionTime?: number;
    retries: number;
  }>;
  nextCursor: string | null;
};

async function newEndpoint(accountId: string, name: string): Promise<string> {
  const template = await t.services.templates.create(accountId, {
    name: `${name}-tpl`,
    imageName: 'worker:dev',
    isServerless: true,
  });
  return (await t.services.endpoints.create(accountId, { name, templateId: template.id, gpuIds: 'ADA_24' })).id;
}

/** Submits one job a second (so creation times differ) and answers their ids, oldest first. */
async function submit(endpointId: string, n: number, input: Record<string, unknown> = {}): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    clock.advance(1000);
    ids.push((await t.services.jobs.client.submit(endpointId, acct.accountId, { input: { ...input, i } })).id);
  }
  return ids;
}

/** The route's limit is 10 calls per 10 s: each call here starts a fresh window. */
async function list(endpointId: string, query = '', key = acct.key) {
  clock.advance(10_000);
  return t.request(key, 'GET', `/v2/${endpointId}/requests${query}`);
}

before(async () => {
  t = await createTestApp({ clock });
  acct = await t.newAccount('requests-owner');
  other = await t.newAccount('requests-other');
});
after(() => t.close());

describe('listing', () => {
  let ep: string;
  let jobs: string[];
  let done: string;
  before(async () => {
    ep = await newEndpoint(acct.accountId, 'listed');
    jobs = await submit(ep, 3, { secret: 'input-never-listed' });
    const [taken] = await t.services.jobs.worker.take(ep, 'w1', { waitMs: 1000 });
    clock.advance(250);
    await t.services.jobs.worker.complete('w1', taken!.id, { output: 'output-never-listed' });
    done = taken!.id;
    const elsewhere = await newEndpoint(acct.accountId, 'elsewhere');
    await submit(elsewhere, 2);
  });

  test("the endpoint's jobs come newest first with id, status, createdAt, delayTime, executionTime and retries only", async () => {
    const res = await list(ep, '', acct.readKey);
    assert.equal(res.statusCode, 200, res.body);
    const body = json(res);
    assert.deepEqual(
      body.requests.map((r: { id: string }) => r.id),
      [...jobs].reverse(),
    );
    assert.equal(body.nextCursor, null);
    const finished = body.requests.find((r: { id: string }) => r.id === done);
    assert.deepEqual(Object.keys(finished).sort(), [
      'createdAt',
      'delayTime',
      'executionTime',
      'id',
      'retries',
      'status',
    ]);
    assert.equal(finished.status, 'COMPLETED');
    assert.equal(finished.executionTime, 250);
    assert.equal(finished.retries, 0);
    const queued = body.requests.find((r: { id: string }) => r.id === jobs[2]);
    assert.deepEqual(queued, { id: jobs[2], status: 'IN_QUEUE', createdAt: queued.createdAt, retries: 0 });
    assert.equal(Date.parse(queued.createdAt) - Date.parse(body.requests[1].createdAt), 1000);
    assert.equal(queued.createdAt, iso(Date.parse(queued.createdAt)), 'createdAt is ISO 8601');
    assert.ok(!res.body.includes('never-listed'), 'input and output stay out of the list');
  });

  test('?status= keeps only the jobs in that status', async () => {
    const queued = json(await list(ep, '?status=IN_QUEUE'));
    assert.deepEqual(
      queued.requests.map((r: { id: string }) => r.id),
      jobs.filter((id) => id !== done).reverse(),
    );
    const completed = json(await list(ep, '?status=COMPLETED'));
    assert.deepEqual(
      completed.requests.map((r: { id: string }) => r.id),
      [done],
    );
    assert.deepEqual(json(await list(ep, '?status=CANCELLED')).requests, []);
  });

  test('a status that is not a job status is a 400 problem naming status and the statuses allowed', async () => {
    const res = await list(ep, '?status=RUNNING');
    assert.equal(res.statusCode, 400);
    assert.match(String(res.headers['content-type']), /application\/problem\+json/);
    assert.deepEqual(json(res).errors, [
      'status: must be one of IN_QUEUE, IN_PROGRESS, COMPLETED, FAILED, CANCELLED, TIMED_OUT',
    ]);
  });

  test('an unknown endpoint and another account’s endpoint answer 404', async () => {
    assert.equal((await list('no-such-endpoint')).statusCode, 404);
    const res = await list(ep, '', other.key);
    assert.equal(res.statusCode, 404);
    assert.ok(!res.body.includes(jobs[0]!));
  });
});

describe('paging', () => {
  let ep: string;
  let jobs: string[];
  before(async () => {
    ep = await newEndpoint(acct.accountId, 'paged');
    jobs = await submit(ep, 5);
  });

  test('?limit= pages through every job once, newest first, until nextCursor is null', async () => {
    const seen: string[] = [];
    const pages: number[] = [];
    let cursor: string | null = null;
    do {
      const res = await list(ep, `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      assert.equal(res.statusCode, 200, res.body);
      const body = json<Page>(res);
      pages.push(body.requests.length);
      seen.push(...body.requests.map((r) => r.id));
      cursor = body.nextCursor;
    } while (cursor !== null);
    assert.deepEqual(pages, [2, 2, 1]);
    assert.deepEqual(seen, [...jobs].reverse());
  });

  test('a page that ends exactly at the last job says so with a null nextCursor', async () => {
    assert.equal(json(await list(ep, '?limit=5')).nextCursor, null);
    assert.notEqual(json(await list(ep, '?limit=4')).nextCursor, null);
  });

  test('jobs that share a creation time are neither skipped nor repeated across pages', async () => {
    const same = await newEndpoint(acct.accountId, 'same-millisecond');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await t.services.jobs.client.submit(same, acct.accountId, { input: { i } })).id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const body: Page = json<Page>(
        await list(same, `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
      );
      seen.push(...body.requests.map((r) => r.id));
      cursor = body.nextCursor;
    } while (cursor !== null);
    assert.deepEqual(seen, [...ids].sort().reverse());
  });

  test('without ?limit= a page holds 100 jobs', async () => {
    const many = await newEndpoint(acct.accountId, 'many');
    for (let i = 0; i < 101; i++) await t.services.jobs.client.submit(many, acct.accountId, { input: { i } });
    const body = json(await list(many));
    assert.equal(body.requests.length, 100);
    assert.equal(typeof body.nextCursor, 'string');
    assert.equal(json(await list(many, '?limit=1000')).requests.length, 101);
  });

  test('a limit outside 1..1000 or not an integer is a 400 problem naming limit', async () => {
    for (const limit of ['0', '1001', '-1', '2.5', 'ten']) {
      const res = await list(ep, `?limit=${limit}`);
      assert.equal(res.statusCode, 400, limit);
      assert.match(json(res).detail, /limit/, limit);
    }
  });

  test('a cursor the route did not answer is a 400 problem naming cursor', async () => {
    for (const cursor of [
      'garbage',
      Buffer.from('x.y').toString('base64url'),
      Buffer.from('123.').toString('base64url'),
      Buffer.from('-5.id').toString('base64url'),
    ]) {
      const res = await list(ep, `?cursor=${encodeURIComponent(cursor)}`);
      assert.equal(res.statusCode, 400, cursor);
      assert.match(String(res.headers['content-type']), /application\/problem\+json/);
      assert.match(json(res).errors[0], /^cursor: /, cursor);
    }
  });
});

describe('rate limits (spec 8.1)', () => {
  test('an eleventh call within 10 seconds is refused with 429 and Retry-After; the next window admits again', async () => {
    const ep = await newEndpoint(acct.accountId, 'requests-limit');
    clock.advance(10_000 - (clock.now() % 10_000));
    for (let i = 0; i < 10; i++)
      assert.equal((await t.request(acct.key, 'GET', `/v2/${ep}/requests`)).statusCode, 200, `call ${i + 1}`);
    const res = await t.request(acct.key, 'GET', `/v2/${ep}/requests`);
    assert.equal(res.statusCode, 429);
    assert.match(String(res.headers['content-type']), /application\/problem\+json/);
    assert.equal(res.headers['retry-after'], '10');
    assert.match(json(res).detail, /\/requests.*10 requests per 10 seconds/);
    // other operations on the endpoint keep their own quota
    assert.equal((await t.request(acct.key, 'GET', `/v2/${ep}/health`)).statusCode, 200);
    clock.advance(10_000);
    assert.equal((await t.request(acct.key, 'GET', `/v2/${ep}/requests`)).statusCode, 200);
  });
});
