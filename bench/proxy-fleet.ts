// The pod HTTP proxy on the fleet, through the agent's tunnel (docs/proxy.md "Fleet"), in the
// deployed shape: node --import tsx bench/proxy-fleet.ts [--latency-requests 3000] [--download-mb 256]
//   [--websockets 1000] [--rounds 3] [--rtt-ms 0] [--link-window-kb 4096] [--tunnel-window-kb N]
// `gantry serve` (runtime fleet), `gantry agent` and the pod's HTTP server
// (test/fixtures/proxy-upstream.mjs in a container of a Docker daemon of the bench's own) each in a
// process of their own; the client here. Measured in the same run:
// 1. latency, one request at a time (GET /health): direct (the container's own address on its
//    bridge) and through the proxy and the agent's tunnel; p50 and p99, the added p50. Goal: <= 5 ms.
// 2. a `--download-mb` download, direct and through the tunnel: MB/s.
// 3. `--websockets` idle WebSockets through the one agent (each echoed once, then left open): the
//    resident memory of Gantry and of the agent, each right after a full GC, before and with them
//    open, per socket. Goal: <= 50 KB per socket in each.
// With --rtt-ms N, the agent reaches the control plane over a long link (bench/support/delay-link.ts:
// a round trip of N ms and a window of --link-window-kb, a stand-in for `tc netem`, whose kernel
// module this machine lacks), and "direct" crosses a link of its own with the same round trip and
// window: one stream's latency and download through the tunnel against the same link without it
// (what the tunnel's own windows cost over a long link). `--websockets 0` leaves out part 3.
// Needs root and dockerd (the daemon is the bench's own, stopped at the end).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildImage } from '../test/support/docker-images.js';
import { dockerDaemonsUnavailable, startDockerDaemon } from '../test/support/docker-daemons.js';
import { freePortRange } from '../test/support/eventually.js';
import { BANNER_12_4, removeStandIns, standInNvidiaSmi } from '../test/support/nvidia-smi.js';
import { openWebSocket, type TestWebSocket } from '../test/support/websocket-client.js';
import { gantryBin, percentile, startGantry, verdict, type Gantry } from './support/gantry.js';
import { startDelayLink, type DelayLink } from './support/delay-link.js';
import { ensureBuilt, printTable } from './support/processes.js';

const { values } = parseArgs({
  options: {
    'latency-requests': { type: 'string', default: '3000' },
    'download-mb': { type: 'string', default: '256' },
    websockets: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '3' },
    'rtt-ms': { type: 'string', default: '0' },
    'link-window-kb': { type: 'string', default: '4096' },
    /** `fleet.tunnels.maxWindowBytes` of the control plane, KB (its default when left out). */
    'tunnel-window-kb': { type: 'string' },
  },
});
const RTT_MS = Number(values['rtt-ms']);
const LINK_WINDOW = Number(values['link-window-kb']) * 1024;
const LATENCY_REQUESTS = Number(values['latency-requests']);
const DOWNLOAD_BYTES = Number(values['download-mb']) * 1024 * 1024;
const SOCKETS = Number(values.websockets);
const ROUNDS = Number(values.rounds);
const GC = ['--expose-gc', '--import', join(import.meta.dirname, 'support', 'gc-on-signal.mjs')];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function get(agent: Agent, url: URL): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = request({ agent, host: url.hostname, port: url.port, path: url.pathname + url.search }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const rssMb = (pid: number): number =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

/** A full GC in the process (gc-on-signal.mjs), then its RSS, MB. */
async function rssAfterGc(pid: number, output: () => string): Promise<number> {
  const seen = output().split('bench-gc ').length;
  process.kill(pid, 'SIGUSR2');
  const t0 = performance.now();
  while (output().split('bench-gc ').length === seen) {
    if (performance.now() - t0 > 10_000) throw new Error(`process ${pid} did not answer SIGUSR2 with a GC`);
    await sleep(50);
  }
  await sleep(500); // the pages V8 frees go back to the kernel a moment after
  return rssMb(pid);
}

async function main(): Promise<void> {
  const unavailable = dockerDaemonsUnavailable();
  if (unavailable) {
    console.log(`skipped: ${unavailable}`);
    return;
  }
  ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'gantry-bench-proxy-fleet-'));
  const daemon = await startDockerDaemon();
  let gantry: Gantry | null = null;
  let agentOut = '';
  let stopAgent = async () => {};
  const links: DelayLink[] = [];
  try {
    const image = await buildImage(daemon.client, {
      name: 'proxy-upstream',
      node: true,
      files: [
        {
          from: join(import.meta.dirname, '..', 'test', 'fixtures', 'proxy-upstream.mjs'),
          to: '/app/proxy-upstream.mjs',
        },
      ],
      changes: ['ENTRYPOINT ["/usr/local/bin/node", "/app/proxy-upstream.mjs"]'],
    });
    gantry = await startGantry({
      nodeArgs: GC,
      config: {
        runtime: { kind: 'fleet' },
        ...(values['tunnel-window-kb']
          ? { fleet: { tunnels: { maxWindowBytes: Number(values['tunnel-window-kb']) * 1024 } } }
          : {}),
        // every client of the bench is 127.0.0.1: no per-address cap; the sockets are one pod's
        server: { maxConnectionsPerClient: 0 },
        proxy: { port: 0, maxConnectionsPerPod: SOCKETS + 100, maxConnectionsPerAccount: SOCKETS + 100 },
      },
    });
    const token = spawnSync(process.execPath, [gantryBin, 'hosts', 'token', 'create', '--data-dir', gantry.dataDir], {
      encoding: 'utf8',
    }).stdout.trim();
    const smi = standInNvidiaSmi({
      csv: '0, GPU-be7c0000-0000-4000-8000-000000000000, NVIDIA GeForce RTX 4090, 24564',
      banner: BANNER_12_4,
    });
    const ports = await freePortRange(20);
    // the agent's way to the control plane: the long link when there is one
    let serverUrl = gantry.url;
    if (RTT_MS > 0) {
      const link = await startDelayLink(
        { host: '127.0.0.1', port: Number(new URL(gantry.url).port) },
        RTT_MS,
        LINK_WINDOW,
      );
      links.push(link);
      serverUrl = `http://127.0.0.1:${link.port}`;
    }
    const agent = spawn(
      process.execPath,
      [
        ...GC,
        gantryBin,
        'agent',
        '--server',
        serverUrl,
        '--token',
        token,
        '--data-dir',
        join(dir, 'agent'),
        '--docker-host',
        daemon.host,
        '--public-ip',
        '127.0.0.1',
        '--port-range',
        `${ports[0]}-${ports[1]}`,
        '--nvidia-smi',
        smi.path,
        '--gpu-mode',
        'env-only',
      ],
      {
        env: { ...process.env, GANTRY_LOG_LEVEL: 'warn', GANTRY_AGENT_FIREWALL: 'off' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const agentPid = agent.pid!;
    agent.stdout.on('data', (d: Buffer) => (agentOut += d.toString()));
    agent.stderr.on('data', (d: Buffer) => (agentOut += d.toString()));
    stopAgent = () =>
      new Promise<void>((resolve) => {
        if (agent.exitCode !== null || agent.signalCode !== null) return resolve();
        agent.once('exit', () => resolve());
        agent.kill('SIGTERM');
      });
    let pod: { id: string; status: string; httpProxy?: Array<{ url: string }> } | null = null;
    for (let i = 0; !pod || pod.status !== 'RUNNING' || !pod.httpProxy?.length; i++) {
      if (i > 600) throw new Error(`the pod did not run:\n${gantry.output().slice(-2000)}\n${agentOut.slice(-2000)}`);
      await sleep(100);
      if (!pod)
        pod = await gantry
          .api<{ id: string; status: string }>('POST', '/v2/pods', {
            name: 'bench-proxy-fleet',
            image,
            gpu: { id: 'NVIDIA GeForce RTX 4090' },
            ports: ['8000/http'],
          })
          .catch(() => null);
      else pod = await gantry.api('GET', `/v2/pods/${pod.id}`);
    }
    const container = (await daemon.client.listContainers({ filters: { label: [`gantry.instance=${pod.id}`] } }))[0]!;
    const inspect = await daemon.client.inspectContainer(container.Id);
    const address = Object.values(inspect!.NetworkSettings?.Networks ?? {}).find((n) => n.IPAddress)!.IPAddress!;
    let direct = `http://${address}:8000/`;
    if (RTT_MS > 0) {
      const link = await startDelayLink({ host: address, port: 8000 }, RTT_MS, LINK_WINDOW);
      links.push(link);
      direct = `http://127.0.0.1:${link.port}/`;
    }
    const targets = { direct, tunnel: pod.httpProxy[0]!.url } as const;
    for (let i = 0; ; i++) {
      const ok = await fetch(`${targets.tunnel}health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (i > 300) throw new Error('the pod did not answer through the proxy');
      await sleep(100);
    }

    const rows: Array<Record<string, string | number>> = [];
    const p50s: Record<'direct' | 'tunnel', number[]> = { direct: [], tunnel: [] };
    const downloads: Record<'direct' | 'tunnel', number[]> = { direct: [], tunnel: [] };
    for (let round = 1; round <= ROUNDS; round++) {
      for (const which of ['direct', 'tunnel'] as const) {
        const one = new Agent({ keepAlive: true, maxSockets: 1 });
        const health = new URL('health', targets[which]);
        for (let i = 0; i < Math.min(200, LATENCY_REQUESTS); i++) await get(one, health); // warm
        const times: number[] = [];
        for (let i = 0; i < LATENCY_REQUESTS; i++) {
          const t = performance.now();
          const r = await get(one, health);
          if (r.status !== 200) throw new Error(`${which}: ${r.status}`);
          times.push(performance.now() - t);
        }
        times.sort((a, b) => a - b);
        p50s[which].push(percentile(times, 50));
        const t = performance.now();
        const down = await get(one, new URL(`download?bytes=${DOWNLOAD_BYTES}`, targets[which]));
        if (down.bytes !== DOWNLOAD_BYTES) throw new Error(`${which}: downloaded ${down.bytes} bytes`);
        const mbps = DOWNLOAD_BYTES / 1024 / 1024 / ((performance.now() - t) / 1000);
        downloads[which].push(mbps);
        one.destroy();
        rows.push({
          round,
          path: which,
          'p50 ms': percentile(times, 50).toFixed(3),
          'p99 ms': percentile(times, 99).toFixed(3),
          'download MB/s': Math.round(mbps),
        });
      }
    }
    printTable(rows);
    const added = median(p50s.tunnel) - median(p50s.direct);
    if (RTT_MS > 0)
      console.log(
        `\nover a ${RTT_MS} ms link (window ${LINK_WINDOW / 1024} KB: at most ${Math.round(LINK_WINDOW / 1024 / 1024 / (RTT_MS / 1000))} MB/s for one stream): ` +
          `added p50 through the agent ${added.toFixed(3)} ms; download through the tunnel ${Math.round(
            median(downloads.tunnel),
          )} MB/s, direct over the same link ${Math.round(median(downloads.direct))} MB/s ` +
          `(${Math.round((100 * median(downloads.tunnel)) / median(downloads.direct))}%)`,
      );
    if (SOCKETS <= 0) return;

    // Idle WebSockets through the one agent.
    const g = gantry;
    const before = {
      gantry: await rssAfterGc(g.child.pid!, () => g.output()),
      agent: await rssAfterGc(agentPid, () => agentOut),
    };
    const sockets: TestWebSocket[] = [];
    for (let i = 0; i < SOCKETS; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(50, SOCKETS - i) }, async () => {
          const ws = await openWebSocket(`${targets.tunnel}ws`);
          ws.send('hello');
          if ((await ws.next()) !== 'echo: hello') throw new Error('a WebSocket did not echo');
          return ws;
        }),
      );
      sockets.push(...batch);
    }
    const open = {
      gantry: await rssAfterGc(g.child.pid!, () => g.output()),
      agent: await rssAfterGc(agentPid, () => agentOut),
    };
    const perSocket = {
      gantry: ((open.gantry - before.gantry) * 1024) / SOCKETS,
      agent: ((open.agent - before.agent) * 1024) / SOCKETS,
    };
    // all still open and answering
    for (const ws of sockets.slice(0, 10)) {
      ws.send('still');
      if ((await ws.next()) !== 'echo: still') throw new Error('an idle WebSocket stopped answering');
    }
    for (const ws of sockets) ws.close();
    printTable([
      {
        process: 'gantry serve',
        'RSS before MB': before.gantry.toFixed(1),
        [`RSS with ${SOCKETS} MB`]: open.gantry.toFixed(1),
        'KB per socket': perSocket.gantry.toFixed(1),
      },
      {
        process: 'gantry agent',
        'RSS before MB': before.agent.toFixed(1),
        [`RSS with ${SOCKETS} MB`]: open.agent.toFixed(1),
        'KB per socket': perSocket.agent.toFixed(1),
      },
    ]);
    console.log(
      `\nmedians of ${ROUNDS} rounds: added p50 through the agent ${added.toFixed(3)} ms (goal <= 5: ${verdict(added <= 5)}); ` +
        `${SOCKETS} idle WebSockets: ${perSocket.gantry.toFixed(1)} KB each in Gantry, ${perSocket.agent.toFixed(1)} KB each in the agent ` +
        `(goal <= 50: ${verdict(perSocket.gantry <= 50 && perSocket.agent <= 50)})`,
    );
  } finally {
    await stopAgent();
    for (const link of links) await link.close();
    await gantry?.stop();
    await daemon.stop();
    removeStandIns();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
