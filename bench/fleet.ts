// The control plane's cost per connected agent: node --import tsx bench/fleet.ts
//   [--agents 1000] [--window 60] [--peer-window 20] [--runtime fleet|process]
// Goal (issue 10): with 1,000 agents connected and idle, each costs the server ≤ 50 KB of RSS and
// ≤ 0.1% of a core.
// The compiled server (`runtime: fleet` as deployed, unless --runtime process: the fleet service
// and `/agent/v1` alone, over the process runtime; SQLite, fleet.heartbeatMs at its default 10 s,
// no per-client connection cap: every stand-in comes from 127.0.0.1) is joined by N stand-in
// agents, all in one child process (support/fleet-agents.ts): each holds one long-poll
// `GET /agent/v1/operations` always open and sends a bare heartbeat `POST /agent/v1/report {}`
// every heartbeatMs ±10%, over its own keep-alive pool of 2 connections, as `gantry agent` does
// at idle.
//   1. the server empty (RSS), then N join tokens (written to its store in one batch, as
//      `gantry hosts token create` writes each) and N joins over HTTP; the stand-ins disconnect;
//   2. baseline: N hosts joined, 0 connected, idle for --peer-window: CPU time, then memory;
//   3. N agents connected: after a ramp and one heartbeat period, idle for --window: RSS and CPU.
//      Per agent: (RSS_N − RSS_0)/N and CPU over the window / (window × N), also net of the
//      baseline's idle CPU. Every host must still read `available` in `gantry hosts list`.
//   4. peer: a fresh server of the same config, empty, then 2N plain keep-alive connections (a
//      `GET /healthz` every 25 s each, so the keep-alive timeout never ends them) for --peer-window:
//      what the connections alone cost, next to what the agents cost.
// Memory is read right after a full GC in the server (support/gc-on-signal.mjs, preloaded with
// --expose-gc), with where it is: V8's heap in use and committed, its young generation (which
// grows to its cap under the requests' allocation rate and shrinks at idle: a cost of the rate,
// not state per agent, so RSS per agent is also shown with it set aside), and RSS outside the heap.
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { configFrom } from '../src/cli/args.js';
import { HostStore } from '../src/fleet/host-store.js';
import { createJoinToken } from '../src/fleet/join-tokens.js';
import { openConfiguredDatabase } from '../src/main.js';
import type { Counters } from './support/fleet-agents.js';
import { gantryBin, startGantry, verdict, type Gantry } from './support/gantry.js';
import { ensureBuilt, printTable } from './support/processes.js';

const { values } = parseArgs({
  options: {
    agents: { type: 'string', default: '1000' },
    window: { type: 'string', default: '60' },
    'peer-window': { type: 'string', default: '20' },
    runtime: { type: 'string', default: 'fleet' },
  },
});
if (values.runtime !== 'fleet' && values.runtime !== 'process') throw new Error('--runtime must be fleet or process');
const N = Number(values.agents);
const WINDOW_S = Number(values.window);
const PEER_WINDOW_S = Number(values['peer-window']);
const HEARTBEAT_MS = 10_000;
const POLL_WAIT_MS = 25_000;
const RAMP_MS = 5_000;
const GOAL_KB = 50;
const GOAL_CPU_PCT = 0.1;
// With runtime fleet the joined hosts enter the inventory, and every report and poll feeds the
// wiring (host:seen); one account, so no job URL off loopback is needed.
const config = { server: { maxConnectionsPerClient: 0 }, runtime: values.runtime };
const nodeArgs = ['--expose-gc', '--import', join(import.meta.dirname, 'support', 'gc-on-signal.mjs')];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Right after a full GC, MB: RSS; the V8 heap in use and committed, its young generation's committed share; memory outside the heap V8 knows of. */
interface Memory {
  rssMb: number;
  heapMb: number;
  heapTotalMb: number;
  youngMb: number;
  externalMb: number;
}

interface Window extends Memory {
  cpuMs: number;
  seconds: number;
}

/** A full GC in the server (support/gc-on-signal.mjs), then its RSS and V8 heap in use. */
async function afterGc(server: Gantry): Promise<Memory> {
  const seen = server.output().split('bench-gc ').length;
  server.child.kill('SIGUSR2');
  const t0 = performance.now();
  while (server.output().split('bench-gc ').length === seen) {
    if (performance.now() - t0 > 10_000) throw new Error('the server did not answer SIGUSR2 with a GC');
    await sleep(50);
  }
  await sleep(500); // the pages V8 frees go back to the kernel a moment after
  const line = server.output().split('bench-gc ').pop()!;
  const mb = (name: string) => Number(new RegExp(`${name}=(\\d+)`).exec(line)?.[1]) / 1024 ** 2;
  return {
    rssMb: server.rssMb(),
    heapMb: mb('heapUsed'),
    heapTotalMb: mb('heapTotal'),
    youngMb: mb('young'),
    externalMb: mb('external'),
  };
}

/** Idles for `seconds`: the CPU time the server spent, then its memory after a full GC. */
async function idle(server: Gantry, seconds: number): Promise<Window> {
  const cpu0 = server.cpuMs();
  const t0 = performance.now();
  await sleep(seconds * 1000);
  const cpuMs = server.cpuMs() - cpu0;
  const elapsed = (performance.now() - t0) / 1000;
  return { ...(await afterGc(server)), cpuMs, seconds: elapsed };
}

/** N one-time join tokens in the server's store, in one batch (what `gantry hosts token create` writes N times). */
async function joinTokens(server: Gantry, n: number): Promise<string[]> {
  const cfg = configFrom({ 'data-dir': server.dataDir, config: join(server.dataDir, 'bench-config.json') });
  const db = await openConfiguredDatabase(cfg);
  try {
    const store = new HostStore(db);
    const tokens: string[] = [];
    for (let i = 0; i < n; i++)
      tokens.push((await createJoinToken(store, cfg.catalog, Date.now(), { ttlMs: cfg.agents.joinTokenTtlMs })).token);
    return tokens;
  } finally {
    await db.close();
  }
}

/** The stand-ins' process and a way to ask it something and wait for its answer. */
function standIns(): { child: ChildProcess; ask<T>(message: object, answer: string): Promise<T> } {
  const child = fork(join(import.meta.dirname, 'support', 'fleet-agents.ts'), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return {
    child,
    ask: <T>(message: object, answer: string) =>
      new Promise<T>((resolve, reject) => {
        const onMessage = (m: { type: string }) => {
          if (m.type !== answer) return;
          child.off('message', onMessage);
          child.off('exit', onExit);
          resolve(m as T);
        };
        const onExit = (code: number | null) => reject(new Error(`the stand-in agents exited (${code})`));
        child.on('message', onMessage);
        child.once('exit', onExit);
        child.send(message);
      }),
  };
}

const stop = async (c: ReturnType<typeof standIns>) => {
  if (c.child.exitCode !== null || !c.child.connected) return;
  await c.ask({ type: 'stop' }, 'stopped').catch(() => undefined);
  c.child.kill();
};

const per = (mbDelta: number, n: number) => (n > 0 ? (mbDelta * 1024) / n : NaN);
const pctCore = (cpuMs: number, seconds: number, n: number) => (cpuMs / (seconds * 1000 * n)) * 100;

/** A row of the table: the memory (after a GC) and CPU of a phase, and per agent against `from`. */
const row = (
  phase: string,
  connections: number | string,
  w: { rssMb: number; heapMb: number; cpuMs?: number; seconds?: number },
  perAgent?: { n: number; from: { rssMb: number; heapMb: number }; cpuMs?: number },
) => ({
  phase,
  connections,
  'RSS MB': w.rssMb.toFixed(1),
  'heap MB': w.heapMb.toFixed(1),
  'CPU ms/s': w.cpuMs === undefined ? '' : (w.cpuMs / w.seconds!).toFixed(1),
  'RSS KB/agent': perAgent ? per(w.rssMb - perAgent.from.rssMb, perAgent.n).toFixed(1) : '',
  'heap KB/agent': perAgent ? per(w.heapMb - perAgent.from.heapMb, perAgent.n).toFixed(1) : '',
  '% core/agent': perAgent?.cpuMs === undefined ? '' : pctCore(perAgent.cpuMs, w.seconds!, perAgent.n).toFixed(4),
});

async function main() {
  ensureBuilt();
  const rows: Array<Record<string, string | number>> = [];
  /** where the memory is, at each point measured */
  const memory: Array<Record<string, string | number>> = [];
  const where = (phase: string, m: Memory) =>
    memory.push({
      phase,
      'RSS MB': m.rssMb.toFixed(1),
      'heap used': m.heapMb.toFixed(1),
      'heap committed': m.heapTotalMb.toFixed(1),
      '…of it young gen.': m.youngMb.toFixed(1),
      'RSS outside the heap': (m.rssMb - m.heapTotalMb).toFixed(1),
      external: m.externalMb.toFixed(1),
    });
  let agentKb: number;
  let agentCpu: number;
  let healthy: boolean;

  // ---- the agents ------------------------------------------------------------------------------
  const server = await startGantry({ config, nodeArgs });
  let agents: ReturnType<typeof standIns> | null = null;
  try {
    await sleep(3000);
    const empty = await afterGc(server);
    const tokens = await joinTokens(server, N);
    agents = standIns();
    const joined = await agents.ask<{ joined: number; failed: number; errors: string[]; seconds: number }>(
      { type: 'join', url: server.url, tokens },
      'joined',
    );
    console.log(
      `${joined.joined} of ${N} stand-ins joined in ${joined.seconds.toFixed(1)} s${joined.failed ? `; ${joined.failed} failed: ${joined.errors.join(' | ')}` : ''}`,
    );
    await sleep(5000);
    const base = await idle(server, PEER_WINDOW_S);
    console.log(
      `baseline: ${base.rssMb.toFixed(1)} MB, ${base.cpuMs} ms CPU in ${base.seconds.toFixed(0)} s; connecting ${joined.joined} agents…`,
    );
    await agents.ask(
      { type: 'connect', heartbeatMs: HEARTBEAT_MS, pollWaitMs: POLL_WAIT_MS, rampMs: RAMP_MS },
      'connected',
    );
    await sleep(HEARTBEAT_MS + 2000);
    const before = await agents.ask<Counters>({ type: 'stats' }, 'stats');
    const live = await idle(server, WINDOW_S);
    const after = await agents.ask<Counters>({ type: 'stats' }, 'stats');
    const listing = spawnSync(process.execPath, [gantryBin, 'hosts', 'list', '--json', '--data-dir', server.dataDir], {
      encoding: 'utf8',
      env: { ...process.env, GANTRY_LOG_LEVEL: 'warn' },
    });
    const hosts = JSON.parse(listing.stdout || '[]') as Array<{ state: string }>;
    const available = hosts.filter((h) => h.state === 'available').length;
    const n = joined.joined;
    const failures = after.heartbeatFailures + after.pollFailures;
    healthy = n === N && failures === 0 && available === n;
    agentKb = per(live.rssMb - base.rssMb, n);
    agentCpu = pctCore(live.cpuMs, live.seconds, n);
    const idleCpuPerS = base.cpuMs / base.seconds;
    console.log(
      `\nin the ${live.seconds.toFixed(0)} s window: ${after.heartbeats - before.heartbeats} heartbeats, ${after.polls - before.polls} long-polls answered, ` +
        `${failures} failures in all${after.errors.length ? ` (${after.errors.join(' | ')})` : ''}; ${available} of ${hosts.length} hosts available\n`,
    );
    where('empty server', empty);
    where(`${n} hosts joined, none connected`, base);
    where(`${n} agents connected, idle`, live);
    rows.push(
      row('empty server', 0, empty),
      row(`${n} hosts joined, none connected (RSS_0)`, 0, base, { n, from: empty }),
      row(`${n} agents connected, idle (RSS_N)`, 2 * n, live, { n, from: base, cpuMs: live.cpuMs }),
      {
        phase: '  …CPU net of the idle server',
        'CPU ms/s': (live.cpuMs / live.seconds - idleCpuPerS).toFixed(1),
        '% core/agent': pctCore(live.cpuMs - idleCpuPerS * live.seconds, live.seconds, n).toFixed(4),
      },
      // V8's young generation grows to its cap under the heartbeats' and polls' allocation rate and
      // shrinks when idle: a cost of the request rate, not state held per agent, and the figure's
      // largest swing between two readings
      {
        phase: '  …RSS less the young generation (state held per agent)',
        'RSS KB/agent': per(live.rssMb - live.youngMb - (base.rssMb - base.youngMb), n).toFixed(1),
      },
      {
        phase: '  …joined and connected, vs the empty server',
        'RSS KB/agent': per(live.rssMb - empty.rssMb, n).toFixed(1),
        'heap KB/agent': per(live.heapMb - empty.heapMb, n).toFixed(1),
      },
    );
  } finally {
    if (agents) await stop(agents);
    await server.stop();
  }

  // ---- the peer: plain keep-alive connections ----------------------------------------------------
  const peer = await startGantry({ config, nodeArgs });
  let plain: ReturnType<typeof standIns> | null = null;
  try {
    await sleep(3000);
    const base = await idle(peer, PEER_WINDOW_S);
    plain = standIns();
    const opened = await plain.ask<{ open: number; failed: number }>(
      { type: 'plain', url: peer.url, connections: 2 * N },
      'plain-open',
    );
    await sleep(5000);
    const live = await idle(peer, PEER_WINDOW_S);
    // two connections stand for one agent
    where('peer: empty server', base);
    where(`peer: ${opened.open} plain connections`, live);
    rows.push(
      row('peer: empty server', 0, base),
      row(`peer: ${opened.open} plain keep-alive connections`, opened.open, live, {
        n: opened.open / 2,
        from: base,
        cpuMs: live.cpuMs,
      }),
    );
  } finally {
    if (plain) await stop(plain);
    await peer.stop();
  }

  console.log(
    `Fleet benchmark (runtime ${values.runtime}): ${N} stand-in agents, heartbeat ${HEARTBEAT_MS / 1000} s, long-poll ${POLL_WAIT_MS / 1000} s, window ${WINDOW_S} s (baseline and peer ${PEER_WINDOW_S} s)\n`,
  );
  printTable(rows);
  console.log('\nWhere the memory is (MB, each after a full GC):\n');
  printTable(memory);
  console.log('');
  const goals = [
    {
      measure: 'RSS per connected agent',
      value: `${agentKb.toFixed(1)} KB`,
      goal: `≤ ${GOAL_KB} KB`,
      verdict: verdict(agentKb <= GOAL_KB && healthy),
    },
    {
      measure: 'CPU per idle agent',
      value: `${agentCpu.toFixed(4)} %`,
      goal: `≤ ${GOAL_CPU_PCT} %`,
      verdict: verdict(agentCpu <= GOAL_CPU_PCT && healthy),
    },
  ];
  printTable(goals);
  if (!healthy)
    console.log('\nFAIL: not every stand-in joined, stayed connected without a failure, and read available');
  if (goals.some((g) => g.verdict !== 'PASS')) process.exitCode = 1;
}

await main();
