// Load-balancing endpoints (docs/load-balancing.md) against the direct connection to the worker:
//   node --import tsx bench/lb.ts [--requests 10000] [--concurrency 16] [--latency-requests 2000] [--rounds 3]
// `gantry serve` in its own process (process runtime), one warm worker of a LOAD_BALANCER endpoint
// (test/fixtures/lb-worker.mjs, workers.min 1) launched by the runtime, and the client here. Each
// round measures, direct (the worker's host port) then through the balancer (key check, least
// outstanding pick, the key stripped): small keep-alive requests `--concurrency` at once
// (requests/s), and one at a time (p50, p99; the balancer's added p50). Client, Gantry and the
// worker share this machine's cores: the ratios are what to read.
import { join } from 'node:path';
import { Agent, request } from 'node:http';
import { parseArgs } from 'node:util';
import { ensureBuilt, printTable } from './support/processes.js';
import { loops, percentile, startGantry } from './support/gantry.js';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '10000' },
    concurrency: { type: 'string', default: '16' },
    'latency-requests': { type: 'string', default: '2000' },
    rounds: { type: 'string', default: '3' },
  },
});
const REQUESTS = Number(values.requests);
const CONCURRENCY = Number(values.concurrency);
const LATENCY_REQUESTS = Number(values['latency-requests']);
const ROUNDS = Number(values.rounds);
const WORKER = 'bench/lb-worker';
const fixture = join(import.meta.dirname, '..', 'test', 'fixtures', 'lb-worker.mjs');

function get(agent: Agent, url: URL, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      { agent, host: url.hostname, port: url.port, path: url.pathname + url.search, headers },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  ensureBuilt();
  const gantry = await startGantry({
    config: {
      images: { [WORKER]: { command: [process.execPath, fixture] } },
      proxy: { port: 0 },
    },
  });
  try {
    const id = await gantry.createEndpoint({
      imageName: WORKER,
      type: 'LOAD_BALANCER',
      scaling: { type: 'REQUEST_COUNT', requestCount: 1000 },
      workersMin: 1,
      workersMax: 1,
    });
    const view = await gantry.api<{ loadBalancerUrl: string }>('GET', `/v2/serverless/${id}`);
    const auth = { authorization: `Bearer ${gantry.key}` };
    let whoami: { port: number } | null = null;
    while (!whoami) {
      const res = await fetch(`${view.loadBalancerUrl}/whoami`, { headers: auth });
      if (res.ok) whoami = (await res.json()) as { port: number };
      else await res.arrayBuffer();
    }
    const targets = {
      direct: { base: `http://127.0.0.1:${whoami.port}/`, headers: {} },
      balancer: { base: `${view.loadBalancerUrl}/`, headers: auth },
    } as const;
    const rows: Array<Record<string, string | number>> = [];
    const figures = {
      direct: { rps: [] as number[], p50: [] as number[] },
      balancer: { rps: [] as number[], p50: [] as number[] },
    };
    for (let round = 1; round <= ROUNDS; round++) {
      for (const which of ['direct', 'balancer'] as const) {
        const { base, headers } = targets[which];
        const url = new URL('whoami', base);
        const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
        await loops(500, CONCURRENCY, async () => void (await get(agent, url, headers)));
        const seconds = await loops(REQUESTS, CONCURRENCY, async () => {
          const status = await get(agent, url, headers);
          if (status !== 200) throw new Error(`${which}: ${status}`);
        });
        const one = new Agent({ keepAlive: true, maxSockets: 1 });
        const times: number[] = [];
        for (let i = 0; i < LATENCY_REQUESTS; i++) {
          const t = performance.now();
          await get(one, url, headers);
          times.push(performance.now() - t);
        }
        times.sort((a, b) => a - b);
        agent.destroy();
        one.destroy();
        figures[which].rps.push(REQUESTS / seconds);
        figures[which].p50.push(percentile(times, 50));
        rows.push({
          round,
          path: which,
          'req/s': Math.round(REQUESTS / seconds),
          'p50 ms': percentile(times, 50).toFixed(3),
          'p99 ms': percentile(times, 99).toFixed(3),
        });
      }
    }
    printTable(rows);
    const ratio = median(figures.balancer.rps) / median(figures.direct.rps);
    const added = median(figures.balancer.p50) - median(figures.direct.p50);
    console.log(
      `\nmedians of ${ROUNDS} rounds: requests/s balancer/direct ${(ratio * 100).toFixed(0)}%; added p50 ${added.toFixed(3)} ms`,
    );
  } finally {
    await gantry.stop();
  }
}

await main();
