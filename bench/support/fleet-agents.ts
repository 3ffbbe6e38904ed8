// Stand-in agents for bench/fleet.ts, all in this one process (forked with IPC): each joins with a
// token, then holds what a real agent holds on the control plane — one long-poll
// `GET /agent/v1/operations` always open and a bare heartbeat `POST /agent/v1/report {}` every
// heartbeatMs (±10%) — over its own keep-alive node:http Agent of 2 sockets, as `gantry agent`
// holds its own connection pool. No Docker, no capacity discovery: the figure is the server's.
// It can also hold plain keep-alive connections (the peer), each sending `GET /healthz` every
// 25 s so the server's keep-alive timeout never closes it.
// Messages (parent → child → parent):
//   { type: 'join', url, tokens }          → { type: 'joined', joined, failed, errors, seconds }
//   { type: 'connect', heartbeatMs, pollWaitMs, rampMs } → { type: 'connected' }
//   { type: 'plain', url, connections }    → { type: 'plain-open', open, failed }
//   { type: 'stats' }                      → { type: 'stats', ...Counters }
//   { type: 'stop' }                       → { type: 'stopped' } and exit
import { Agent, request } from 'node:http';

export interface Counters {
  heartbeats: number;
  heartbeatFailures: number;
  /** long-polls answered 200 (on time out, or with operations) */
  polls: number;
  pollFailures: number;
  operations: number;
  plainRequests: number;
  plainFailures: number;
  /** a few of the failures, for the report */
  errors: string[];
}

interface StandIn {
  name: string;
  credential: string;
  agent: Agent;
  after: number;
}

const counters: Counters = {
  heartbeats: 0,
  heartbeatFailures: 0,
  polls: 0,
  pollFailures: 0,
  operations: 0,
  plainRequests: 0,
  plainFailures: 0,
  errors: [],
};
const standIns: StandIn[] = [];
const plain: Agent[] = [];
const timers = new Set<NodeJS.Timeout>();
let base: URL | null = null;
let stopping = false;

const send = (message: unknown) => process.send!(message);
const noteError = (what: string) => {
  if (counters.errors.length < 10) counters.errors.push(what);
};
const later = (ms: number, fn: () => void) => {
  const t = setTimeout(() => {
    timers.delete(t);
    fn();
  }, ms);
  timers.add(t);
};

function call(
  agent: Agent,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
  timeoutMs = 40_000,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: base!.hostname,
        port: base!.port,
        method,
        path,
        headers:
          body === undefined
            ? headers
            : { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

const capacity = {
  vcpus: 16,
  memoryGb: 64,
  diskGb: 500,
  gpus: [],
  cudaVersion: null,
  gpuMode: 'nvidia',
  cpuFlavors: ['cpu3c', 'cpu3g'],
  notes: [],
};

async function join(tokens: string[]): Promise<void> {
  const started = performance.now();
  let next = 0;
  let failed = 0;
  const errors: string[] = [];
  const worker = async () => {
    while (next < tokens.length) {
      const i = next++;
      const agent = new Agent({ keepAlive: true, maxSockets: 2 });
      const name = `bench-agent-${i}`;
      const body = JSON.stringify({
        token: tokens[i],
        name,
        // 198.18.0.0/15 is the range set aside for benchmarks (RFC 2544)
        publicIp: `198.18.${i >> 8}.${i & 255}`,
        portRange: [40000, 40999],
        agentVersion: 'bench',
        capacity,
      });
      try {
        const res = await call(agent, 'POST', '/agent/v1/join', {}, body);
        if (res.status !== 201) throw new Error(`join ${res.status}: ${res.body.slice(0, 300)}`);
        standIns.push({
          name,
          credential: (JSON.parse(res.body) as { credential: string }).credential,
          agent,
          after: 0,
        });
      } catch (err) {
        failed++;
        if (errors.length < 5) errors.push((err as Error).message);
        agent.destroy();
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  // joined and disconnected: the baseline holds the hosts, not their connections
  for (const s of standIns) s.agent.destroy();
  for (const s of standIns) s.agent = new Agent({ keepAlive: true, maxSockets: 2 });
  send({ type: 'joined', joined: standIns.length, failed, errors, seconds: (performance.now() - started) / 1000 });
}

function poll(s: StandIn, waitMs: number): void {
  if (stopping) return;
  call(
    s.agent,
    'GET',
    `/agent/v1/operations?after=${s.after}&waitMs=${waitMs}`,
    { authorization: `Bearer ${s.credential}` },
    undefined,
    waitMs + 10_000,
  ).then(
    (res) => {
      if (stopping) return;
      if (res.status !== 200) {
        counters.pollFailures++;
        noteError(`poll ${res.status}: ${res.body.slice(0, 200)}`);
        return later(1000, () => poll(s, waitMs));
      }
      counters.polls++;
      const ops = (JSON.parse(res.body) as { operations: Array<{ seq: number }> }).operations;
      counters.operations += ops.length;
      if (ops.length > 0) s.after = ops[ops.length - 1]!.seq;
      poll(s, waitMs);
    },
    (err: Error) => {
      if (stopping) return;
      counters.pollFailures++;
      noteError(`poll: ${err.message}`);
      later(1000, () => poll(s, waitMs));
    },
  );
}

function heartbeat(s: StandIn, heartbeatMs: number): void {
  if (stopping) return;
  call(s.agent, 'POST', '/agent/v1/report', { authorization: `Bearer ${s.credential}` }, '{}').then(
    (res) => {
      if (res.status === 200) counters.heartbeats++;
      else {
        counters.heartbeatFailures++;
        noteError(`report ${res.status}: ${res.body.slice(0, 200)}`);
      }
    },
    (err: Error) => {
      counters.heartbeatFailures++;
      noteError(`report: ${err.message}`);
    },
  );
  later(heartbeatMs * (0.9 + Math.random() * 0.2), () => heartbeat(s, heartbeatMs));
}

/** Starts every stand-in over `rampMs` (a thousand connects at once overflow the listen backlog); heartbeats spread over a period. */
async function connect(heartbeatMs: number, pollWaitMs: number, rampMs: number): Promise<void> {
  const step = rampMs / Math.max(1, standIns.length);
  for (const [i, s] of standIns.entries()) {
    later(i * step, () => poll(s, pollWaitMs));
    later(i * step + Math.random() * heartbeatMs, () => heartbeat(s, heartbeatMs));
  }
  await new Promise((r) => setTimeout(r, rampMs + 100));
  send({ type: 'connected' });
}

/** `connections` keep-alive connections, one request each, then a `GET /healthz` every 25 s (±10%). */
async function openPlain(connections: number): Promise<void> {
  let open = 0;
  let failed = 0;
  const keep = (agent: Agent) => {
    if (stopping) return;
    call(agent, 'GET', '/healthz', {}).then(
      (res) => {
        if (res.status === 200) counters.plainRequests++;
        else counters.plainFailures++;
      },
      (err: Error) => {
        counters.plainFailures++;
        noteError(`healthz: ${err.message}`);
      },
    );
    later(25_000 * (0.9 + Math.random() * 0.2), () => keep(agent));
  };
  for (let i = 0; i < connections; i++) {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    plain.push(agent);
    try {
      const res = await call(agent, 'GET', '/healthz', {});
      if (res.status !== 200) throw new Error(`healthz ${res.status}`);
      open++;
      later(25_000 * (0.9 + Math.random() * 0.2), () => keep(agent));
    } catch (err) {
      failed++;
      noteError((err as Error).message);
    }
  }
  send({ type: 'plain-open', open, failed });
}

process.on(
  'message',
  (m: {
    type: string;
    url?: string;
    tokens?: string[];
    heartbeatMs?: number;
    pollWaitMs?: number;
    rampMs?: number;
    connections?: number;
  }) => {
    if (m.url) base = new URL(m.url);
    if (m.type === 'join') void join(m.tokens!);
    else if (m.type === 'connect') void connect(m.heartbeatMs!, m.pollWaitMs!, m.rampMs ?? 5000);
    else if (m.type === 'plain') void openPlain(m.connections!);
    else if (m.type === 'stats') send({ type: 'stats', ...counters });
    else if (m.type === 'stop') {
      stopping = true;
      for (const t of timers) clearTimeout(t);
      for (const s of standIns) s.agent.destroy();
      for (const a of plain) a.destroy();
      send({ type: 'stopped' });
      process.disconnect();
    }
  },
);
