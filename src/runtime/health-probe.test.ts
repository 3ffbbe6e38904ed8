import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeTarget, probeOnce, waitUntilHealthy, type ProbeTarget, type ProbeTiming } from './health-probe.js';

async function serve(status: number): Promise<{ server: Server; port: number }> {
  const server = createServer((_req, res) => res.writeHead(status).end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}
const http = (port: number, path = '/health'): ProbeTarget => ({ type: 'http', host: '127.0.0.1', port, path });

test('an http probe passes on any answer below 500 and fails on a 5xx, naming the status', async () => {
  const ok = await serve(404);
  const broken = await serve(503);
  try {
    assert.equal(await probeOnce(http(ok.port), 10_000), null);
    assert.equal(await probeOnce(http(broken.port), 10_000), 'answered HTTP 503');
  } finally {
    ok.server.close();
    broken.server.close();
  }
});

// Port 0 is refused by the kernel on every connect: unlike a port freed a moment ago, no other
// test can start listening on it in between.
const REFUSED_PORT = 0;

test('a tcp probe passes once something accepts, and says why it failed when nothing does', async () => {
  const { server, port } = await serve(200);
  try {
    assert.equal(await probeOnce({ ...http(port), type: 'tcp' }, 10_000), null);
  } finally {
    server.close();
  }
  assert.match((await probeOnce({ ...http(REFUSED_PORT), type: 'tcp' }, 10_000)) ?? '', /ECONNREFUSED/);
  assert.match((await probeOnce(http(REFUSED_PORT), 10_000)) ?? '', /ECONNREFUSED/);
});

/**
 * Time that moves only when the loop waits or an attempt takes it: the loop's rules without a real
 * clock. `attempt` says how long an attempt takes and what it meets; one that takes its whole
 * timeout reads as a hang.
 */
function manualTiming(attempt: (timeoutMs: number, at: number) => { costMs: number; error: string | null }) {
  let now = 0;
  const attempts: Array<{ at: number; timeoutMs: number }> = [];
  const timing: ProbeTiming = {
    now: () => now,
    sleep: async (ms, signal) => {
      signal.throwIfAborted();
      now += ms;
    },
  };
  const probe = async (_target: ProbeTarget, timeoutMs: number): Promise<string | null> => {
    attempts.push({ at: now, timeoutMs });
    const { costMs, error } = attempt(timeoutMs, now);
    now += Math.min(costMs, timeoutMs);
    return costMs >= timeoutMs ? `no answer within ${timeoutMs} ms` : error;
  };
  return { timing, probe, attempts };
}
const refused = { costMs: 5, error: 'connect ECONNREFUSED 127.0.0.1:1' };
const hangs = { costMs: Infinity, error: null };

test('waiting for health probes every interval until the timeout, no attempt outlasting the time left', async () => {
  const { timing, probe, attempts } = manualTiming(() => refused);
  const result = await waitUntilHealthy(http(1), {
    intervalMs: 100,
    timeoutMs: 1_000,
    signal: new AbortController().signal,
    timing,
    probe,
  });
  assert.deepEqual(result, { ok: false, aborted: false, lastError: 'connect ECONNREFUSED 127.0.0.1:1' });
  // an attempt (5 ms) and a pause (100 ms) per turn: 10 turns fit in 1 s
  assert.equal(attempts.length, 10);
  for (const a of attempts) assert.ok(a.at + a.timeoutMs <= 1_000, JSON.stringify(a));
  assert.deepEqual(
    attempts.slice(0, 3).map((a) => a.at),
    [0, 105, 210],
  );
});

test('an attempt cut short by the deadline does not hide the error the attempts before it met', async () => {
  // As on a loaded machine: the attempts are refused, but the last one, cut to the 100 ms left,
  // times out before its refusal is read.
  const { timing, probe, attempts } = manualTiming((_timeoutMs, at) => (at >= 900 ? hangs : refused));
  const result = await waitUntilHealthy(http(1), {
    intervalMs: 295,
    timeoutMs: 1_000,
    signal: new AbortController().signal,
    timing,
    probe,
  });
  assert.deepEqual(
    attempts.map((a) => [a.at, a.timeoutMs]),
    [
      [0, 1_000],
      [300, 700],
      [600, 400],
      [900, 100],
    ],
  );
  assert.deepEqual(result, { ok: false, aborted: false, lastError: 'connect ECONNREFUSED 127.0.0.1:1' });
});

test('an attempt that found a server hanging still reports the hang when nothing else was seen', async () => {
  const { timing, probe } = manualTiming(() => hangs);
  const result = await waitUntilHealthy(http(1), {
    intervalMs: 100,
    timeoutMs: 500,
    signal: new AbortController().signal,
    timing,
    probe,
  });
  assert.deepEqual(result, { ok: false, aborted: false, lastError: 'no answer within 500 ms' });
});

test('waiting for health succeeds at the first attempt that passes, and ends at once when aborted', async () => {
  let n = 0;
  const { timing } = manualTiming(() => refused);
  const passesThird = async (): Promise<string | null> => (++n < 3 ? 'answered HTTP 503' : null);
  const options = { intervalMs: 100, timeoutMs: 10_000, timing, probe: passesThird };
  assert.deepEqual(await waitUntilHealthy(http(1), { ...options, signal: new AbortController().signal }), { ok: true });
  assert.equal(n, 3);
  const abort = new AbortController();
  abort.abort();
  const aborted = await waitUntilHealthy(http(1), { ...options, signal: abort.signal });
  assert.deepEqual(aborted, { ok: false, aborted: true, lastError: 'no attempt finished' });
  assert.equal(n, 3, 'no attempt after the abort');
  // aborted while pausing between attempts
  const later = new AbortController();
  const pausing: ProbeTiming = { now: timing.now, sleep: async () => (later.abort(), later.signal.throwIfAborted()) };
  const cut = await waitUntilHealthy(http(1), {
    ...options,
    probe: async () => 'answered HTTP 503',
    timing: pausing,
    signal: later.signal,
  });
  assert.deepEqual(cut, { ok: false, aborted: true, lastError: 'answered HTTP 503' });
});

test('a real wait for a port nothing listens on ends with its refusal', async () => {
  const result = await waitUntilHealthy(http(REFUSED_PORT), {
    intervalMs: 10_000,
    timeoutMs: 30_000,
    signal: AbortSignal.timeout(60_000),
    // a manual deadline: three real attempts of up to 10 s each (a refusal takes microseconds),
    // with no real pause between them, however loaded the machine
    probe: (target, timeoutMs) => probeOnce(target, timeoutMs),
    timing: ((): ProbeTiming => {
      let turns = 0;
      return { now: () => (turns >= 3 ? 30_000 : 0), sleep: async () => void turns++ };
    })(),
  });
  assert.ok(!result.ok && !result.aborted && /ECONNREFUSED/.test(result.lastError), JSON.stringify(result));
});

test('targets read as a URL or as tcp host:port', () => {
  assert.equal(describeTarget(http(31000, 'ping')), 'http://127.0.0.1:31000/ping');
  assert.equal(describeTarget({ ...http(31000), type: 'tcp' }), 'tcp 127.0.0.1:31000');
});
