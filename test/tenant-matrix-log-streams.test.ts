// Log streams a tenant may hold open: each one holds a connection and a reader of its instance's
// output for as long as it lasts, so one account opening thousands (with many keys, from many
// addresses, within the request rate limits) would hold as many file descriptors on the server.
// An account holds at most `quotas.logStreams` across all its keys (read keys too) and both log
// routes; past it a stream is a 429 problem with Retry-After; another account is unaffected; and a
// stream frees its slot however it ends: the client leaves (even before the first byte), the pod
// stops, the server closes. Pods and workers are real processes (idle placeholders), on SQLite and
// on PostgreSQL.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';
import { eventually } from './support/eventually.js';
import { buildApp } from '../src/http/app.js';
import { LogStreams } from '../src/logs/log-streams.js';
import type { LogTargets } from '../src/logs/log-targets.js';

const GPU = 'NVIDIA GeForce RTX 4090';
const CAP = 3;

/** A log stream held open: its answer's status and headers, its body so far, and a way to leave. */
interface HeldStream {
  status: number;
  headers: IncomingMessage['headers'];
  body(): string;
  /** the server ended it */
  ended: Promise<void>;
  leave(): void;
}

function hold(base: string, path: string, key: string): Promise<HeldStream> {
  return new Promise((resolve, reject) => {
    const req: ClientRequest = request(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      const ended = new Promise<void>((done) => res.once('end', done));
      resolve({ status: res.statusCode!, headers: res.headers, body: () => body, ended, leave: () => req.destroy() });
    });
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
    req.end();
  });
}

for (const { name, skip } of dialects()) {
  describe(`log streams an account may hold open, on ${name}`, { skip }, () => {
    let t: TestApp;
    let base: string;
    let a: { accountId: string; key: string; readKey: string };
    let secondKeyOfA: string;
    let b: { accountId: string; key: string; readKey: string };
    let podA: string;
    let podB: string;
    let endpointA: string;
    let workerA: string;

    const held = (accountId: string) => t.services.logs.heldBy(accountId);
    const podLogs = (id: string) => `/v2/pods/${id}/logs?tail=0`;
    const createPod = async (key: string): Promise<string> => {
      const res = await t.request(key, 'POST', '/v2/pods', { name: 'logs', image: 'idle:1', gpu: { id: GPU } });
      assert.equal(res.statusCode, 201, res.body);
      const id = json(res).id as string;
      await eventually(
        `pod ${id} RUNNING`,
        async () => json(await t.request(key, 'GET', `/v2/pods/${id}`)).status === 'RUNNING',
      );
      return id;
    };
    const leaveAll = async (streams: HeldStream[], accountId: string): Promise<void> => {
      for (const s of streams) s.leave();
      await eventually(`the slots of ${accountId} are freed`, async () => held(accountId) === 0);
    };

    before(async () => {
      t = await createTestApp({
        dialect: name,
        file: {
          quotas: { logStreams: CAP },
          pods: { reconcileIntervalMs: 50, stopGraceMs: 1000 },
          rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 },
        },
      });
      base = await t.app.listen({ port: 0, host: '127.0.0.1' });
      await t.services.autoscaler.start({ loop: false });
      a = await t.newAccount('streamer');
      secondKeyOfA = (await t.services.accounts.createKey(a.accountId, { scope: 'write' })).key;
      b = await t.newAccount('neighbour');
      podA = await createPod(a.key);
      podB = await createPod(b.key);
      const template = await t.services.templates.create(a.accountId, {
        name: 'w',
        imageName: 'worker:dev',
        isServerless: true,
      });
      endpointA = (
        await t.services.endpoints.create(a.accountId, {
          name: 'ep',
          templateId: template.id,
          gpuIds: 'ADA_24',
          workersMin: 0,
          workersMax: 1,
          idleTimeout: 5,
        })
      ).id;
      assert.equal((await t.request(a.key, 'POST', `/v2/${endpointA}/run`, { input: {} })).statusCode, 200);
      await t.services.autoscaler.tick(t.clock.now());
      workerA = await eventually('a worker launched', async () => t.services.autoscaler.workerIds(endpointA)[0]);
    });
    after(() => t?.close());

    test(`an account holds at most quotas.logStreams streams across its keys, read keys and both log routes; the next is a 429 saying how many it holds and the limit, with Retry-After; another account's streams are unaffected`, async () => {
      const open = [
        await hold(base, podLogs(podA), a.key),
        await hold(base, podLogs(podA), a.readKey),
        await hold(base, `/v2/serverless/${endpointA}/workers/${workerA}/logs?tail=0`, secondKeyOfA),
      ];
      assert.deepEqual(
        open.map((s) => s.status),
        [200, 200, 200],
      );
      assert.equal(held(a.accountId), CAP);
      for (const [key, path] of [
        [a.key, podLogs(podA)],
        [a.readKey, podLogs(podA)],
        [secondKeyOfA, `/v2/serverless/${endpointA}/workers/${workerA}/logs`],
      ] as const) {
        const refused = await t.request(key, 'GET', path);
        assert.equal(refused.statusCode, 429, refused.body);
        assert.match(String(refused.headers['content-type']), /application\/problem\+json/);
        assert.equal(refused.headers['retry-after'], '5');
        const problem = json(refused);
        assert.equal(problem.code, 'TOO_MANY_LOG_STREAMS');
        assert.match(problem.detail, new RegExp(`holds ${CAP} open log streams.*quotas\\.logStreams = ${CAP}`));
      }
      assert.equal(held(a.accountId), CAP, 'a refused stream takes no slot');
      // The neighbour's streams are its own.
      const neighbour = [];
      for (let i = 0; i < CAP; i++) neighbour.push(await hold(base, podLogs(podB), b.readKey));
      assert.ok(neighbour.every((s) => s.status === 200));
      // An unknown or another account's pod is a 404 first, never a 429 that would tell it exists.
      assert.equal((await t.request(a.key, 'GET', podLogs(podB))).statusCode, 404);
      await leaveAll(open, a.accountId);
      await leaveAll(neighbour, b.accountId);
    });

    test('a stream the client leaves frees its slot, and a new one may be opened in its place', async () => {
      const open = [];
      for (let i = 0; i < CAP; i++) open.push(await hold(base, podLogs(podA), a.key));
      open[0]!.leave();
      await eventually('the slot is freed', async () => held(a.accountId) === CAP - 1);
      const again = await hold(base, podLogs(podA), a.key);
      assert.equal(again.status, 200);
      await leaveAll([...open, again], a.accountId);
    });

    test('a client that leaves before the first byte of its stream leaks no slot', async () => {
      // The pod is looked up slowly here: the client is gone before the stream begins.
      let entered!: () => void;
      const lookingUp = new Promise<void>((r) => (entered = r));
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const slow: LogTargets = Object.assign(Object.create(t.services.logTargets) as LogTargets, {
        pod: async (accountId: string, podId: string) => {
          entered();
          await gate;
          return t.services.logTargets.pod(accountId, podId);
        },
      });
      // The slots this app's streams take, and those given back.
      const logs = t.services.logs;
      let admitted = 0;
      let released = 0;
      const counted = {
        keepAliveMs: logs.keepAliveMs,
        open: logs.open.bind(logs),
        admit: (accountId: string) => {
          const slot = logs.admit(accountId);
          admitted++;
          return { release: () => (released++, slot.release()) };
        },
      } as unknown as LogStreams;
      const app: FastifyInstance = await buildApp(
        { ...t.services, logTargets: slow, logs: counted },
        { logger: false },
      );
      try {
        const at = await app.listen({ port: 0, host: '127.0.0.1' });
        const req = request(`${at}${podLogs(podA)}`, { headers: { authorization: `Bearer ${a.key}` } });
        req.on('error', () => undefined);
        req.end();
        await lookingUp;
        req.destroy();
        await eventually('the server saw the client leave', async () => {
          const connections = await new Promise<number>((r) => app.server.getConnections((_e, n) => r(n)));
          return connections === 0;
        });
        release();
        await eventually(
          'the stream took its slot and gave it back',
          async () => admitted === 1 && released === 1,
          10_000,
        );
        assert.equal(held(a.accountId), 0);
      } finally {
        release();
        await app.close();
      }
    });

    test('a stream whose pod stops ends and frees its slot', async () => {
      const id = await createPod(a.key);
      const stream = await hold(base, podLogs(id), a.key);
      assert.equal(stream.status, 200);
      assert.equal(held(a.accountId), 1);
      assert.equal((await t.request(a.key, 'POST', `/v2/pods/${id}/action`, { action: 'stop' })).statusCode, 200);
      await stream.ended;
      assert.match(stream.body(), /stopped by user/);
      await eventually('the slot is freed', async () => held(a.accountId) === 0);
    });

    test('the streams a closing server ends free their slots', async () => {
      const logs = new LogStreams({
        runtime: t.services.runtime,
        systemLog: t.services.systemLog,
        clock: t.clock,
        maxStreamsPerAccount: CAP,
      });
      const app = await buildApp({ ...t.services, logs }, { logger: false });
      try {
        const at = await app.listen({ port: 0, host: '127.0.0.1' });
        const open = [await hold(at, podLogs(podA), a.key), await hold(at, podLogs(podA), a.readKey)];
        assert.deepEqual(
          open.map((s) => s.status),
          [200, 200],
        );
        assert.equal(logs.heldBy(a.accountId), 2);
        logs.close();
        await Promise.all(open.map((s) => s.ended));
        await eventually('the slot is freed', async () => logs.heldBy(a.accountId) === 0);
      } finally {
        await app.close();
      }
    });
  });
}
