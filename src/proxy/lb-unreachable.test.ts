/**
 * A request whose worker's port refuses its connection reached no worker, so the balancer offers
 * it to another (docs/load-balancing.md "Retries"): a worker may stop, on another replica's word,
 * before this replica's pool hears of it. Real sockets: the balancer listens on a real port, one
 * worker is a real HTTP server, the other a port nothing listens on; the runtime's `connect` dials
 * them as the process runtime does (127.0.0.1 and the port).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect as netConnect, createServer as createNetServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { FakeClock } from '../domain/clock.js';
import type { Endpoint } from '../domain/endpoint.js';
import { LbPool } from '../serverless/lb-pool.js';
import { LbProxy } from './lb-proxy.js';

const KEY = 'lb-unreachable-key';
let worker: Server;
let front: Server;
let refusing: number;
const ports = new Map<string, number>();
const lines: string[] = [];
const seen: string[] = [];
let pool: LbPool;
let proxy: LbProxy;
const endpoint = { id: 'ep1', accountId: 'acc1', type: 'LB', workersMax: 2 } as unknown as Endpoint;

/** A port nothing listens on: one the kernel gave a server that is closed again. */
async function closedPort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

before(async () => {
  worker = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += String(c)));
    req.on('end', () => {
      seen.push(`${req.method} ${req.url} ${body}`);
      res.end(`served ${body}`);
    });
  });
  await new Promise<void>((r) => worker.listen(0, '127.0.0.1', r));
  refusing = await closedPort();
  ports.set('gone', refusing);
  ports.set('alive', (worker.address() as AddressInfo).port);
  const clock = new FakeClock();
  // both answer their health checks until the test says otherwise: "gone" stopped after its last check
  pool = new LbPool({
    probe: async () => 200,
    now: () => clock.now(),
    log: (id, line) => lines.push(`${id} ${line}`),
    wanted: () => {},
    logger: { info: () => {}, warn: () => {} },
    healthIntervalMs: 60_000,
  });
  proxy = new LbProxy({
    pool,
    accountOf: async (key) => (key === KEY ? 'acc1' : null),
    endpoints: { get: async () => endpoint },
    runtime: {
      name: 'test',
      connect: (id, _port) =>
        new Promise<Socket>((resolve, reject) => {
          const s = netConnect(ports.get(id)!, '127.0.0.1');
          s.once('connect', () => resolve(s));
          s.once('error', reject);
        }),
    },
    settings: {
      connectTimeoutMs: 5_000,
      idleTimeoutMs: 0,
      maxConnectionsPerPod: 100,
      maxConnectionsPerAccount: 100,
      loadBalancer: {
        workerWaitMs: 1_000,
        processingTimeoutMs: 10_000,
        maxPayloadBytes: 1 << 20,
        healthIntervalMs: 60_000,
        domain: null,
      },
    } as never,
    logger: { warn: () => {} },
  });
  front = createServer((req, res) => proxy.handle(req, res, proxy.routeOf(req)!));
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
});
after(async () => {
  proxy.close();
  pool.close();
  await new Promise<void>((r) => front.close(() => r()));
  await new Promise<void>((r) => worker.close(() => r()));
});

const send = (path: string, body?: string) =>
  fetch(`http://127.0.0.1:${(front.address() as AddressInfo).port}/lb/ep1${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${KEY}` },
    ...(body === undefined ? {} : { body }),
  });

test('a request whose worker refuses the connection goes whole to another ready worker, and the refusing one takes no more until a check finds it ready', async () => {
  for (const id of ['gone', 'alive'])
    pool.add({ workerId: id, endpointId: 'ep1', accountId: 'acc1', port: 80, healthPort: 80, healthPath: '/ping' });
  await new Promise((r) => setImmediate(r));
  assert.ok(pool.workerState('gone')?.ready && pool.workerState('alive')?.ready);
  // "gone" held fewer (none) and ties go in turn: both are tried within two requests
  const answers: string[] = [];
  for (const body of ['one', 'two']) {
    const res = await send('/echo', body);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-runpod-worker-id'), 'alive');
    answers.push(await res.text());
  }
  assert.deepEqual(answers, ['served one', 'served two'], 'each body reached the worker whole');
  assert.deepEqual(seen, ['POST /echo one', 'POST /echo two']);
  assert.equal(pool.workerState('gone')?.ready, false, 'the refusing worker is unhealthy');
  assert.ok(
    lines.some((l) => l.startsWith('gone health: unhealthy (a request could not reach port 80')),
    lines.join('\n'),
  );
  assert.equal(pool.inFlight('ep1'), 0, 'every lease was given back');
});

test('with no other worker, a request that reached none waits for one and is answered 503 when none comes, never 502', async () => {
  pool.remove('alive');
  pool.checkAll();
  await new Promise((r) => setImmediate(r));
  assert.equal(pool.workerState('gone')?.ready, true, 'its health check found it ready again');
  const started = Date.now();
  const res = await send('/echo');
  assert.equal(res.status, 503, await res.clone().text());
  assert.ok(Date.now() - started >= 900, 'it waited for a worker rather than failing at once');
});
