// GET /metrics (docs/metrics.md) on a real listening server, driven by fetch: the token, the
// exposition format, the job counters and gauges, route labels, and that a scrape reads no SQL.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { KyselyPlugin } from 'kysely';
import { loadConfig } from '../src/config.js';
import { startServer, type RunningServer } from '../src/main.js';
import { openDatabase, type Db } from '../src/store/database.js';
import { freePort } from '../src/runtime/runtime-contract.js';
import { eventually } from './support/eventually.js';

const TOKEN = 'metrics-token-0123456789abcdef';
const QUIET = 600_000;

/** The Db, with every statement it runs counted (Kysely queries and the raw SQLite hot paths). */
function counting(db: Db): { db: Db; statements: () => number } {
  let n = 0;
  const plugin: KyselyPlugin = {
    transformQuery: (args) => {
      n++;
      return args.node;
    },
    transformResult: async (args) => args.result,
  };
  const kysely = db.kysely.withPlugin(plugin);
  const wrapped: Db = {
    ...db,
    kysely,
    withTransaction: (fn) => kysely.transaction().execute(fn),
    ...(db.syncTransaction
      ? {
          syncTransaction: (fn) => {
            n++;
            return db.syncTransaction!(fn);
          },
        }
      : {}),
    ...(db.syncRead
      ? {
          syncRead: (fn) => {
            n++;
            return db.syncRead!(fn);
          },
        }
      : {}),
    close: () => db.close(),
  };
  return { db: wrapped, statements: () => n };
}

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text exposition format (0.0.4) strictly: any other line fails the test. */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  const typed = new Map<string, string>();
  const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
  const sampleLine = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: -?\\d+)?$`);
  const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(?:,|$)/y;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# HELP ')) {
      assert.match(line, new RegExp(`^# HELP ${NAME} .*$`));
      continue;
    }
    if (line.startsWith('# TYPE ')) {
      const m = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`).exec(line);
      assert.ok(m, `a TYPE line: ${line}`);
      assert.ok(!typed.has(m[1]!), `${m[1]} typed once`);
      typed.set(m[1]!, m[2]!);
      continue;
    }
    assert.ok(!line.startsWith('#'), `no other comment: ${line}`);
    const m = sampleLine.exec(line);
    assert.ok(m, `a sample line: ${line}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      labelPair.lastIndex = 0;
      while (labelPair.lastIndex < m[2].length) {
        const at = labelPair.lastIndex;
        const lm = labelPair.exec(m[2]);
        assert.ok(lm && lm.index === at, `labels of: ${line}`);
        labels[lm[1]!] = lm[2]!;
      }
    }
    // Prometheus reads values with Go's ParseFloat: NaN and ±Inf in any case
    const word = m[3]!.toLowerCase();
    const value = word === '+inf' || word === 'inf' ? Infinity : word === '-inf' ? -Infinity : Number(m[3]);
    assert.ok(!Number.isNaN(value) || word === 'nan', `a number: ${line}`);
    const family = m[1]!.replace(/_(bucket|sum|count)$/, '');
    assert.ok(typed.has(m[1]!) || typed.has(family), `${m[1]} has a TYPE line before it`);
    samples.push({ name: m[1]!, labels, value });
  }
  return samples;
}

const valueOf = (samples: Sample[], name: string, labels: Record<string, string> = {}): number =>
  samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);

let server: RunningServer;
let dataDir: string;
let statements: () => number;
let adminKey = '';
let tenant: { accountId: string; key: string };
let ep: string;

const scrape = (authorization?: string) =>
  fetch(`${server.url}/metrics`, { headers: authorization ? { authorization } : {} });
const metrics = async (): Promise<Sample[]> => {
  const res = await scrape(`Bearer ${TOKEN}`);
  assert.equal(res.status, 200);
  return parseExposition(await res.text());
};
const api = (key: string, method: string, path: string, body?: unknown) =>
  fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'gantry-metrics-'));
  const configPath = join(dataDir, 'config.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      server: { port: await freePort() },
      metrics: { token: TOKEN, refreshMs: 0 },
      // Every background loop quiet during the test: what runs SQL is what the test does.
      pods: { reconcileIntervalMs: QUIET },
      jobs: { timekeeperIntervalMs: QUIET, takeWaitMs: 0 },
      serverless: { autoscaler: { intervalMs: QUIET }, webhooks: { pollIntervalMs: QUIET } },
    }),
  );
  const config = loadConfig({
    env: { GANTRY_DATA_DIR: dataDir, GANTRY_CONFIG: configPath, GANTRY_LOG_LEVEL: 'silent' },
  });
  const counted = counting(await openDatabase({ url: null, dataDir }));
  statements = counted.statements;
  server = await startServer(config, {
    db: counted.db,
    logger: pino({ level: 'silent' }),
    print: (text) => {
      adminKey = /export GANTRY_API_KEY=(\S+)/.exec(text)?.[1] ?? adminKey;
    },
  });
  const { services } = server;
  const admin = (await services.accounts.authenticate(adminKey))!;
  tenant = { accountId: admin.accountId, key: adminKey };
  const template = await services.templates.create(tenant.accountId, {
    name: 'metrics-tpl',
    imageName: 'worker:dev',
    isServerless: true,
  });
  ep = (
    await services.endpoints.create(tenant.accountId, {
      name: 'metrics-ep',
      templateId: template.id,
      gpuIds: 'ADA_24',
      workersMax: 0,
    })
  ).id;
});

after(async () => {
  await server?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the token', () => {
  test('a scrape without the metrics token is refused 401 as problem+json', async () => {
    const res = await scrape();
    assert.equal(res.status, 401);
    assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/);
    const body = (await res.json()) as { status: number; detail: string };
    assert.equal(body.status, 401);
  });

  test('a wrong token, or one differing in its last character or length, is refused 401', async () => {
    for (const wrong of ['nope', TOKEN.slice(0, -1) + 'X', TOKEN + 'x', TOKEN.slice(0, -1)]) {
      const res = await scrape(`Bearer ${wrong}`);
      assert.equal(res.status, 401, wrong);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.ok(!(await res.text()).includes(wrong), 'the presented token is not echoed');
    }
  });

  test("a tenant's API key cannot read the metrics", async () => {
    const res = await scrape(`Bearer ${tenant.key}`);
    assert.equal(res.status, 401);
    const raw = await scrape(tenant.key);
    assert.equal(raw.status, 401);
  });

  test('the metrics token is no API key: it opens no other route', async () => {
    const res = await api(TOKEN, 'GET', '/v2/pods');
    assert.equal(res.status, 401);
  });
});

describe('the exposition', () => {
  test('a scrape with the token answers the Prometheus text format with process metrics', async () => {
    const res = await scrape(`Bearer ${TOKEN}`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const samples = parseExposition(await res.text());
    assert.ok(valueOf(samples, 'process_resident_memory_bytes') > 0);
    assert.ok(samples.some((s) => s.name === 'nodejs_eventloop_lag_seconds'));
    assert.ok(
      samples.some((s) => s.name === 'gantry_host_gpus'),
      'the demo fleet is listed per host',
    );
  });

  test('the route label is the pattern, never the job id in the URL', async () => {
    const id = 'no-such-job-0123456789';
    const res = await api(tenant.key, 'GET', `/v2/${ep}/status/${id}`);
    assert.equal(res.status, 404);
    const text = await (await scrape(`Bearer ${TOKEN}`)).text();
    assert.ok(!text.includes(id), 'the job id is no label value');
    assert.ok(!text.includes(`/v2/${ep}/`), 'the endpoint id in the URL is no route label');
    const samples = parseExposition(text);
    assert.ok(
      valueOf(samples, 'gantry_http_requests_total', { route: '/v2/:endpointId/status/:jobId', status: '404' }) >= 1,
    );
    // an unknown URL counts under one label, whatever its path
    await api(tenant.key, 'GET', '/no/such/path/abc123');
    const after = await metrics();
    assert.ok(valueOf(after, 'gantry_http_requests_total', { route: 'unmatched', status: '404' }) >= 1);
    assert.ok(!after.some((s) => Object.values(s.labels).some((v) => v.includes('abc123'))));
  });
});

describe('the jobs', () => {
  test('the queue depth gauge follows submissions, and a job taken and completed moves the counters', async () => {
    const before = await metrics();
    const queued0 = valueOf(before, 'gantry_jobs_queued', { endpoint: ep });
    const submitted0 = valueOf(before, 'gantry_jobs_submitted_total', { endpoint: ep });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await api(tenant.key, 'POST', `/v2/${ep}/run`, { input: { i } });
      assert.equal(res.status, 200);
      ids.push(((await res.json()) as { id: string }).id);
    }
    let now = await metrics();
    assert.equal(valueOf(now, 'gantry_jobs_queued', { endpoint: ep }), queued0 + 3);
    assert.equal(valueOf(now, 'gantry_jobs_submitted_total', { endpoint: ep }), submitted0 + 3);

    const take = await fetch(`${server.url}/v2/${ep}/job-take/w1`, { headers: { authorization: tenant.key } });
    assert.equal(take.status, 200);
    const job = (await take.json()) as { id: string };
    now = await metrics();
    assert.equal(valueOf(now, 'gantry_jobs_queued', { endpoint: ep }), queued0 + 2);
    assert.equal(valueOf(now, 'gantry_jobs_in_progress', { endpoint: ep }), 1);
    assert.equal(valueOf(now, 'gantry_job_delay_seconds_count', { endpoint: ep }), 1);

    const done = await fetch(`${server.url}/v2/${ep}/job-done/w1?id=${job.id}`, {
      method: 'POST',
      headers: { authorization: tenant.key, 'content-type': 'application/json' },
      body: JSON.stringify({ output: { ok: true } }),
    });
    assert.equal(done.status, 200);
    now = await metrics();
    assert.equal(valueOf(now, 'gantry_jobs_in_progress', { endpoint: ep }), 0);
    assert.equal(valueOf(now, 'gantry_jobs_finished_total', { endpoint: ep, status: 'COMPLETED' }), 1);
    assert.equal(valueOf(now, 'gantry_job_execution_seconds_count', { endpoint: ep }), 1);
    assert.ok(valueOf(now, 'gantry_store_commit_batch_size_count', { group: 'submits' }) >= 1);
    assert.ok(valueOf(now, 'gantry_store_commit_batch_size_count', { group: 'posts' }) >= 1);

    // a cancelled queued job leaves the queue; a purge empties it
    const cancel = await api(tenant.key, 'POST', `/v2/${ep}/cancel/${ids.find((id) => id !== job.id)!}`);
    assert.equal(cancel.status, 200);
    now = await metrics();
    assert.equal(valueOf(now, 'gantry_jobs_queued', { endpoint: ep }), queued0 + 1);
    assert.equal(valueOf(now, 'gantry_jobs_finished_total', { endpoint: ep, status: 'CANCELLED' }), 1);
    assert.equal((await api(tenant.key, 'POST', `/v2/${ep}/purge-queue`)).status, 200);
    assert.equal(valueOf(await metrics(), 'gantry_jobs_queued', { endpoint: ep }), 0);
  });

  test('the gauges read again from the store agree with what the job flow kept', async () => {
    for (let i = 0; i < 2; i++)
      assert.equal((await api(tenant.key, 'POST', `/v2/${ep}/run`, { input: {} })).status, 200);
    const kept = valueOf(await metrics(), 'gantry_jobs_queued', { endpoint: ep });
    await server.services.metrics!.refresh({ jobs: true });
    assert.equal(valueOf(await metrics(), 'gantry_jobs_queued', { endpoint: ep }), kept);
    assert.equal(kept, 2);
  });

  test('no label value is a string a tenant chose: endpoints are named by id', async () => {
    const text = await (await scrape(`Bearer ${TOKEN}`)).text();
    assert.ok(!text.includes('metrics-ep'), "the endpoint's name is never a label");
    assert.ok(!text.includes('metrics-tpl'));
  });
});

test('a scrape issues no SQL, however many jobs are queued', async () => {
  // quiet: the autoscaler's nudged pass after the submissions above has run
  let last = -1;
  await eventually(
    'the server to stop issuing statements',
    async () => {
      const n = statements();
      const quiet = n === last;
      last = n;
      return quiet;
    },
    10_000,
    300,
  );
  const beforeScrapes = statements();
  assert.ok(beforeScrapes > 0, 'the counting store saw the statements of the test so far');
  for (let i = 0; i < 20; i++) await metrics();
  assert.equal(statements() - beforeScrapes, 0);
});

describe('the docs', () => {
  const families = async (): Promise<Set<string>> => {
    const text = await (await scrape(`Bearer ${TOKEN}`)).text();
    return new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
  };

  test('every metric the Grafana dashboard queries is one the server exposes', async () => {
    const exposed = await families();
    const dashboard = readFileSync(join(import.meta.dirname, '..', 'docs', 'grafana-dashboard.json'), 'utf8');
    const queried = new Set(
      [...dashboard.matchAll(/\b((?:gantry|process|nodejs)_[a-z0-9_]+)/g)].map((m) => m[1]!.replace(/_bucket$/, '')),
    );
    assert.ok(queried.size > 20);
    for (const name of queried) assert.ok(exposed.has(name), `${name} is exposed`);
  });

  test('every gantry metric the server exposes is described in docs/metrics.md', async () => {
    const doc = readFileSync(join(import.meta.dirname, '..', 'docs', 'metrics.md'), 'utf8');
    for (const name of await families())
      if (name.startsWith('gantry_')) assert.ok(doc.includes(`\`${name}\``), `${name} is in docs/metrics.md`);
  });
});
