/**
 * The pod proxy remembers which pod port a name reaches (pod-proxy.ts `#resolve`) so that a busy
 * port's requests cost no read of the store, and forgets it as soon as the pod's status changes:
 * a real listener and client; the targets and the runtime are fakes that count lookups (the rule
 * under test is the proxy's memory, not the store's).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { PodHttpTarget } from '../pods/pod-http-targets.js';
import type { PodEventMap } from '../pods/pod-events.js';
import { PodProxy } from './pod-proxy.js';

const LABEL = 'pod1-8000-abcdefghijklmnopqrst';
const target: PodHttpTarget = { podId: 'pod1', accountId: 'acc1', port: 8000, hostId: null };
let lookups = 0;
/** a lookup that waits for `release()` before answering, when set; `begun` is called as it waits */
let held: Promise<void> | null = null;
let begun = (): void => {};
let clock = 1_000_000;
const bus = new EventEmitter();
let proxy: PodProxy;
let server: Server;
let url = '';

const status = (podId: string): void =>
  void bus.emit('pod:status', {
    podId,
    accountId: 'acc1',
    gpuTypeId: null,
    from: 'RUNNING',
    to: 'RUNNING',
    at: clock,
  } satisfies PodEventMap['pod:status']);

before(async () => {
  proxy = new PodProxy({
    targets: {
      resolve: async () => {
        lookups++;
        if (held) {
          begun();
          await held;
        }
        return target;
      },
      pass: () => '',
      checkPass: () => false,
    },
    now: () => clock,
    // nothing listens: every request that reached the runtime is a 502, which is all this needs
    runtime: { name: 'fake', connect: async () => Promise.reject(new Error('nothing listens here')) },
    events: {
      on: (name, listener) => {
        bus.on(name, listener);
        return () => bus.off(name, listener);
      },
    },
    settings: {
      domain: null,
      publicUrl: 'http://proxy.test',
      requireKey: false,
      maxConnectionsPerPod: 100,
      maxConnectionsPerAccount: 100,
      connectTimeoutMs: 5_000,
      responseTimeoutMs: 5_000,
      idleTimeoutMs: 0,
    },
    logger: { debug: () => {}, warn: () => {} },
  });
  server = createServer(proxy.handleRequest);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/${LABEL}/`;
});

after(async () => {
  proxy.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const hit = async (): Promise<number> => {
  const res = await fetch(url);
  await res.text();
  return res.status;
};

test('a name is looked up once for the requests of the next second, then again', async () => {
  lookups = 0;
  status('pod1');
  assert.equal(await hit(), 502);
  assert.equal(await hit(), 502);
  assert.equal(await hit(), 502);
  assert.equal(lookups, 1);
  clock += 1_001;
  assert.equal(await hit(), 502);
  assert.equal(lookups, 2);
});

test('a status change of the pod forgets its names at once; another pod’s change keeps them', async () => {
  status('pod1');
  lookups = 0;
  await hit();
  status('pod2');
  await hit();
  assert.equal(lookups, 1);
  status('pod1');
  await hit();
  assert.equal(lookups, 2);
});

test('a lookup begun before a status change is not remembered: it may have read the old status', async () => {
  status('pod1');
  lookups = 0;
  let release = (): void => {};
  held = new Promise<void>((resolve) => (release = resolve));
  const waiting = new Promise<void>((resolve) => (begun = resolve));
  const first = hit();
  await waiting;
  status('pod1');
  release();
  held = null;
  await first;
  await hit();
  assert.equal(lookups, 2);
});
