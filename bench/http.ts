// HTTP throughput of Gantry's pod routes against a bare Fastify route on the same machine, in one run.
//   node --import tsx bench/http.ts [--seconds 8] [--connections 32]
// Goals (issue 2): GET /v2/pods/{id} >= 60% of the bare GET; POST /v2/pods >= 25% of the bare POST;
// pod creates end to end on SQLite >= 1,000/s.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import autocannon from 'autocannon';
import { printTable, startChild } from './support/processes.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '8' }, connections: { type: 'string', default: '32' } } });
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const root = join(import.meta.dirname, '..');

interface Result {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
}

async function load(opts: autocannon.Options): Promise<Result> {
  const r = await autocannon({ connections, duration: seconds, ...opts });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx + r.errors };
}

export function benchFleet(hosts: number, types = ['NVIDIA GeForce RTX 4090', 'NVIDIA RTX A5000', 'NVIDIA A100 80GB PCIe', 'NVIDIA L40S']) {
  const cudas = ['11.8', '12.1', '12.2', '12.4', '12.8'];
  const dcs = ['US-TX-3', 'US-CA-2', 'EU-RO-1', 'EU-CZ-1'];
  return Array.from({ length: hosts }, (_, i) => ({
    id: `bench-${i}`,
    dataCenterId: dcs[i % dcs.length],
    cloud: i % 3 === 0 ? 'COMMUNITY' : 'SECURE',
    gpuTypeId: types[i % types.length],
    gpuCount: 8,
    cudaVersion: cudas[i % cudas.length],
    vcpus: 256,
    memoryGb: 2048,
    diskGb: 100_000,
    portRange: [10000 + (i % 50) * 1000, 10000 + (i % 50) * 1000 + 999],
  }));
}

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'gantry-bench-http-'));
  const configPath = join(dataDir, 'config.json');
    // every POST in the run must find a GPU: 5,000 hosts × 8 RTX 4090
  writeFileSync(configPath, JSON.stringify({ fleet: benchFleet(5000, ['NVIDIA GeForce RTX 4090']), pods: { reconcileIntervalMs: 60_000 } }));
  const bare = await startChild(['--import', 'tsx', join(root, 'bench/support/bare-server.ts')], {}, /bare listening on (\S+)/);
  const gantry = await startChild([join(root, 'bin/gantry.js'), 'serve', '--port', '0', '--data-dir', dataDir, '--config', configPath], { GANTRY_LOG_LEVEL: 'warn', GANTRY_BOOTSTRAP_KEY: 'bench-admin-key-0001' }, /gantry listening on (\S+)/);
  try {
    const made = spawnSync(process.execPath, [join(root, 'bin/gantry.js'), 'keys', 'create', '--account', 'admin', '--scope', 'write', '--exempt', '--data-dir', dataDir], { encoding: 'utf8' });
    const key = made.stdout.trim();
    if (!key) throw new Error(`could not create a key: ${made.stderr}`);
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const podBody = JSON.stringify({ name: 'bench', image: 'ubuntu:22.04', gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 }, ports: ['8888/http'] });
    const created = await fetch(`${gantry.url}/v2/pods`, { method: 'POST', headers, body: podBody });
    if (created.status !== 201) throw new Error(`create failed: ${created.status} ${await created.text()}`);
    const pod = (await created.json()) as { id: string };

    // warm both servers' JITs
    await autocannon({ url: `${bare.url}/bare/x`, connections, duration: 2 });
    await autocannon({ url: `${gantry.url}/v2/pods/${pod.id}`, headers, connections, duration: 2 });

    const bareGet = await load({ url: `${bare.url}/bare/x` });
    const podGet = await load({ url: `${gantry.url}/v2/pods/${pod.id}`, headers });
    const barePost = await load({ url: `${bare.url}/bare`, method: 'POST', headers: { 'content-type': 'application/json' }, body: podBody });
    const podPost = await load({ url: `${gantry.url}/v2/pods`, method: 'POST', headers, body: podBody });

    const rows = [
      { route: 'bare GET (peer)', 'req/s': bareGet.rps.toFixed(0), 'p50 ms': bareGet.p50, 'p99 ms': bareGet.p99, errors: bareGet.non2xx, ratio: '', goal: '', verdict: '' },
      { route: 'GET /v2/pods/{id}', 'req/s': podGet.rps.toFixed(0), 'p50 ms': podGet.p50, 'p99 ms': podGet.p99, errors: podGet.non2xx, ratio: `${((podGet.rps / bareGet.rps) * 100).toFixed(0)}%`, goal: '>= 60%', verdict: podGet.rps / bareGet.rps >= 0.6 && podGet.non2xx === 0 ? 'PASS' : 'FAIL' },
      { route: 'bare POST (peer)', 'req/s': barePost.rps.toFixed(0), 'p50 ms': barePost.p50, 'p99 ms': barePost.p99, errors: barePost.non2xx, ratio: '', goal: '', verdict: '' },
      { route: 'POST /v2/pods', 'req/s': podPost.rps.toFixed(0), 'p50 ms': podPost.p50, 'p99 ms': podPost.p99, errors: podPost.non2xx, ratio: `${((podPost.rps / barePost.rps) * 100).toFixed(0)}%`, goal: '>= 25%', verdict: podPost.rps / barePost.rps >= 0.25 && podPost.non2xx === 0 ? 'PASS' : 'FAIL' },
      { route: 'pod creates/s (SQLite, end to end)', 'req/s': podPost.rps.toFixed(0), 'p50 ms': '', 'p99 ms': '', errors: '', ratio: '', goal: '>= 1000/s', verdict: podPost.rps >= 1000 ? 'PASS' : 'FAIL' },
    ];
    console.log(`\nHTTP benchmark: ${seconds}s per run, ${connections} connections, server RSS after: ${gantry.rssMb().toFixed(0)} MB\n`);
    printTable(rows);
  } finally {
    await Promise.all([bare.stop(), gantry.stop()]);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
