// The pod HTTP proxy (docs/proxy.md) against the direct connection, in the deployed shape:
//   node --import tsx bench/proxy.ts [--requests 20000] [--concurrency 32] [--latency-requests 3000] [--download-mb 1024] [--rounds 3]
// `gantry serve` in its own process (process runtime), the pod's HTTP server
// (test/fixtures/proxy-upstream.mjs) in its own process launched by the runtime, and the client
// here. Each round measures, direct (the pod's host port) then through the proxy:
// 1. small keep-alive requests (GET /health, "ok"), `--concurrency` at once: requests/s, and the
//    proxy's CPU per request (Gantry's user + system time over the requests). Goal: proxy >= 50%
//    of direct.
// 2. latency at a fixed load below saturation: one request at a time; p50 and p99, the proxy's
//    added p50. Goal: <= 0.5 ms added.
// 3. a `--download-mb` download (GET /download): MB/s, and Gantry's resident memory before and at
//    its peak during it (flat: the proxy holds no body). Goal: proxy >= 80% of direct.
// Client, proxy and upstream share this machine's cores: the ratios are what to read. Beside them,
// two floors in their own processes are measured in the same rounds (bench/support/tcp-relay.mjs):
// `relay`, a bare TCP relay (the extra hop alone), and `node-http`, the smallest proxy Node's http
// module makes (the hop and HTTP parsing, nothing of Gantry's routing, limits or rewriting).
import { join } from 'node:path';
import { Agent, request } from 'node:http';
import { parseArgs } from 'node:util';
import { ensureBuilt, printTable, startChild } from './support/processes.js';
import { loops, percentile, startGantry, verdict } from './support/gantry.js';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '32' },
    'latency-requests': { type: 'string', default: '3000' },
    'download-mb': { type: 'string', default: '1024' },
    rounds: { type: 'string', default: '3' },
    /** Writes a CPU profile of the server (node --cpu-prof) into this directory. */
    profile: { type: 'string' },
  },
});
const REQUESTS = Number(values.requests);
const CONCURRENCY = Number(values.concurrency);
const LATENCY_REQUESTS = Number(values['latency-requests']);
const DOWNLOAD_BYTES = Number(values['download-mb']) * 1024 * 1024;
const ROUNDS = Number(values.rounds);
const UPSTREAM = 'bench/proxy-upstream';
const fixture = join(import.meta.dirname, '..', 'test', 'fixtures', 'proxy-upstream.mjs');

/** GET `url`, reading and dropping the body; answers the status and the bytes read. */
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

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  ensureBuilt();
  const gantry = await startGantry({
    ...(values.profile ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${values.profile}`] } : {}),
    config: {
      images: {
        [UPSTREAM]: {
          command: [process.execPath, fixture],
          health: { type: 'http', port: 8000, path: '/health', intervalMs: 25, timeoutMs: 20_000 },
        },
      },
    },
  });
  try {
    const created = await gantry.api<{ id: string }>('POST', '/v2/pods', {
      name: 'bench-proxy',
      image: UPSTREAM,
      gpu: { id: 'NVIDIA GeForce RTX 4090' },
      ports: ['8000/http'],
    });
    let pod: {
      status: string;
      httpProxy: Array<{ url: string }>;
      runtime: { ports?: Array<{ public: number }> } | null;
    };
    for (;;) {
      pod = await gantry.api('GET', `/v2/pods/${created.id}`);
      if (pod.status === 'RUNNING') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const proxied = pod.httpProxy[0]!.url;
    const direct = `http://127.0.0.1:${pod.runtime!.ports![0]!.public}/`;
    const floor = (mode: 'tcp' | 'http') =>
      startChild(
        [join(import.meta.dirname, 'support', 'tcp-relay.mjs'), mode, String(pod.runtime!.ports![0]!.public)],
        {},
        /relay listening on (\S+)/,
      );
    const [relay, nodeHttp] = await Promise.all([floor('tcp'), floor('http')]);
    const targets = { direct, relay: relay.url, 'node-http': nodeHttp.url, proxy: proxied } as const;
    const rows: Array<Record<string, string | number>> = [];
    type Figures = { rps: number[]; p50: number[]; p99: number[]; mbps: number[] };
    const figures: Record<keyof typeof targets, Figures> = {
      direct: { rps: [], p50: [], p99: [], mbps: [] },
      relay: { rps: [], p50: [], p99: [], mbps: [] },
      'node-http': { rps: [], p50: [], p99: [], mbps: [] },
      proxy: { rps: [], p50: [], p99: [], mbps: [] },
    };
    const cpuPerRequest: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const which of ['direct', 'relay', 'node-http', 'proxy'] as const) {
        const base = targets[which];
        const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
        const health = new URL('health', base);
        await loops(500, CONCURRENCY, async () => void (await get(agent, health))); // warm
        // the CPU of the process in the middle: Gantry, or the floor measured
        const middle = which === 'proxy' ? gantry : which === 'relay' ? relay : which === 'node-http' ? nodeHttp : null;
        const cpuBefore = middle?.cpuMs() ?? 0;
        const seconds = await loops(REQUESTS, CONCURRENCY, async () => {
          const r = await get(agent, health);
          if (r.status !== 200) throw new Error(`${which}: ${r.status}`);
        });
        const cpu = (middle?.cpuMs() ?? 0) - cpuBefore;
        const rps = REQUESTS / seconds;
        figures[which].rps.push(rps);
        if (which === 'proxy') cpuPerRequest.push((cpu / REQUESTS) * 1000);
        const one = new Agent({ keepAlive: true, maxSockets: 1 });
        const times: number[] = [];
        for (let i = 0; i < LATENCY_REQUESTS; i++) {
          const t = performance.now();
          await get(one, health);
          times.push(performance.now() - t);
        }
        times.sort((a, b) => a - b);
        figures[which].p50.push(percentile(times, 50));
        figures[which].p99.push(percentile(times, 99));
        const t = performance.now();
        // Gantry's resident memory while the download runs through it (flat: bytes are not held)
        const rssBefore = gantry.rssMb();
        let rssPeak = rssBefore;
        const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, gantry.rssMb())), 50);
        const down = await get(one, new URL(`download?bytes=${DOWNLOAD_BYTES}`, base));
        clearInterval(sampler);
        if (down.bytes !== DOWNLOAD_BYTES) throw new Error(`${which}: downloaded ${down.bytes} bytes`);
        const mbps = DOWNLOAD_BYTES / 1024 / 1024 / ((performance.now() - t) / 1000);
        figures[which].mbps.push(mbps);
        agent.destroy();
        one.destroy();
        rows.push({
          round,
          path: which,
          'req/s': Math.round(rps),
          'p50 ms': percentile(times, 50).toFixed(3),
          'p99 ms': percentile(times, 99).toFixed(3),
          'download MB/s': Math.round(mbps),
          'middle CPU µs/req': middle ? ((cpu / REQUESTS) * 1000).toFixed(0) : '-',
          'gantry RSS during download MB': `${rssBefore.toFixed(0)} → ${rssPeak.toFixed(0)}`,
        });
      }
    }
    await Promise.all([relay.stop(), nodeHttp.stop()]);
    printTable(rows);
    const ofDirect = (which: 'relay' | 'node-http', what: 'rps' | 'mbps'): string =>
      `${((median(figures[which][what]) / median(figures.direct[what])) * 100).toFixed(0)}%`;
    console.log(
      `\nfloors: the bare TCP relay (the hop alone) requests/s ${ofDirect('relay', 'rps')} of direct, download ${ofDirect('relay', 'mbps')}; ` +
        `Node's bare HTTP proxy requests/s ${ofDirect('node-http', 'rps')}, download ${ofDirect('node-http', 'mbps')}`,
    );
    const rpsRatio = median(figures.proxy.rps) / median(figures.direct.rps);
    const addedP50 = median(figures.proxy.p50) - median(figures.direct.p50);
    const mbpsRatio = median(figures.proxy.mbps) / median(figures.direct.mbps);
    console.log(
      `medians of ${ROUNDS} rounds: requests/s proxy/direct ${(rpsRatio * 100).toFixed(0)}% (goal >= 50%: ${verdict(rpsRatio >= 0.5)}); ` +
        `added p50 ${addedP50.toFixed(3)} ms (goal <= 0.5: ${verdict(addedP50 <= 0.5)}); ` +
        `download proxy/direct ${(mbpsRatio * 100).toFixed(0)}% (goal >= 80%: ${verdict(mbpsRatio >= 0.8)}); ` +
        `proxy CPU ${median(cpuPerRequest).toFixed(0)} µs per small request`,
    );
  } finally {
    await gantry.stop();
  }
}

await main();
