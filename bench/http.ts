// HTTP throughput of Gantry's pod routes against a bare Fastify route on the same machine, in one run.
//   node --import tsx bench/http.ts [--seconds 8] [--connections 32] [--live]
// --live: the GET reads a pod that runs a real process (`sleep`), so the runtime's utilisation
// sampler runs during the load (issue 11); without it the pod is an idle placeholder.
// Goals (issue 2): GET /v2/pods/{id} >= 60% of the bare GET; POST /v2/pods >= 25% of the bare POST;
// pod creates end to end on SQLite >= 1,000/s.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import autocannon from 'autocannon';
import { ensureBuilt, printTable, startChild } from './support/processes.js';
import { benchFleet } from './support/bench-fleet.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '8' },
    connections: { type: 'string', default: '32' },
    live: { type: 'boolean', default: false },
  },
});
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const root = join(import.meta.dirname, '..');

interface Result {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  /** server CPU per request, µs: robust to a busy machine, where req/s is not */
  cpuUs: number;
}

async function load(server: { cpuMs(): number }, opts: autocannon.Options): Promise<Result> {
  const before = server.cpuMs();
  const r = await autocannon({ connections, duration: seconds, ...opts });
  const cpuUs = ((server.cpuMs() - before) * 1000) / Math.max(1, r.requests.total);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx + r.errors, cpuUs };
}

async function main() {
  ensureBuilt();
  const dataDir = mkdtempSync(join(tmpdir(), 'gantry-bench-http-'));
  const configPath = join(dataDir, 'config.json');
  // every POST in the run must find a GPU: 30,000 hosts × 8 RTX 4090 (two thirds SECURE); one
  // account creates them all, so its pod and GPU quotas are far above that (the check still runs)
  const images = values.live ? { 'bench/sleeper': { command: ['sleep', '3600'], tenantArgs: false } } : {};
  writeFileSync(
    configPath,
    JSON.stringify({
      fleet: benchFleet(30_000, ['NVIDIA GeForce RTX 4090']),
      images,
      pods: { reconcileIntervalMs: 60_000 },
      quotas: { pods: 1e9, gpus: 1e9 },
    }),
  );
  const bare = await startChild(
    ['--import', 'tsx', join(root, 'bench/support/bare-server.ts')],
    {},
    /bare listening on (\S+)/,
  );
  const gantry = await startChild(
    [join(root, 'bin/gantry.js'), 'serve', '--port', '0', '--data-dir', dataDir, '--config', configPath],
    { GANTRY_LOG_LEVEL: 'warn', GANTRY_BOOTSTRAP_KEY: 'bench-admin-key-0001' },
    /gantry listening on (\S+)/,
  );
  try {
    const made = spawnSync(
      process.execPath,
      [
        join(root, 'bin/gantry.js'),
        'keys',
        'create',
        '--account',
        'admin',
        '--scope',
        'write',
        '--exempt',
        '--data-dir',
        dataDir,
      ],
      { encoding: 'utf8' },
    );
    const key = made.stdout.trim();
    if (!key) throw new Error(`could not create a key: ${made.stderr}`);
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const podBody = JSON.stringify({
      name: 'bench',
      image: 'ubuntu:22.04',
      gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 },
      ports: ['8888/http'],
    });
    const getBody = values.live ? JSON.stringify({ ...JSON.parse(podBody), image: 'bench/sleeper' }) : podBody;
    const created = await fetch(`${gantry.url}/v2/pods`, { method: 'POST', headers, body: getBody });
    if (created.status !== 201) throw new Error(`create failed: ${created.status} ${await created.text()}`);
    const pod = (await created.json()) as { id: string };
    if (values.live) await waitRunning(gantry.url, pod.id, headers);

    // warm both servers' JITs
    await autocannon({ url: `${bare.url}/bare/x`, connections, duration: 2 });
    await autocannon({ url: `${gantry.url}/v2/pods/${pod.id}`, headers, connections, duration: 2 });

    const bareGet = await load(bare, { url: `${bare.url}/bare/x` });
    const podGet = await load(gantry, { url: `${gantry.url}/v2/pods/${pod.id}`, headers });
    const barePost = await load(bare, {
      url: `${bare.url}/bare`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: podBody,
    });
    const podPost = await load(gantry, { url: `${gantry.url}/v2/pods`, method: 'POST', headers, body: podBody });

    const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
    const row = (route: string, r: Result, peer?: Result, goal?: number) => ({
      route,
      'req/s': r.rps.toFixed(0),
      'p50 ms': r.p50,
      'p99 ms': r.p99,
      errors: r.non2xx,
      'CPU µs/req': r.cpuUs.toFixed(0),
      'req/s ratio': peer ? pct(r.rps / peer.rps) : '',
      'CPU ratio': peer ? pct(peer.cpuUs / r.cpuUs) : '',
      goal: goal ? `>= ${pct(goal)}` : '',
      verdict: peer && goal ? (r.rps / peer.rps >= goal && r.non2xx === 0 ? 'PASS' : 'FAIL') : '',
    });
    const rows = [
      row('bare GET (peer)', bareGet),
      row('GET /v2/pods/{id}', podGet, bareGet, 0.6),
      row('bare POST (peer)', barePost),
      row('POST /v2/pods', podPost, barePost, 0.25),
      {
        ...row('pod creates/s, SQLite, end to end', podPost),
        goal: '>= 1000/s',
        verdict: podPost.rps >= 1000 && podPost.non2xx === 0 ? 'PASS' : 'FAIL',
      },
    ];
    console.log(
      `\nHTTP benchmark: ${seconds}s per run, ${connections} connections, GET of a ${values.live ? 'live process pod (sampler running)' : 'placeholder pod'}, server RSS after: ${gantry.rssMb().toFixed(0)} MB.\n'req/s ratio' is the goal's measure; 'CPU ratio' (peer CPU per request / ours) is the same comparison made robust to other load on the machine.\n`,
    );
    printTable(rows);
  } finally {
    await Promise.all([bare.stop(), gantry.stop()]);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function waitRunning(url: string, id: string, headers: Record<string, string>): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const pod = (await (await fetch(`${url}/v2/pods/${id}`, { headers })).json()) as { status: string };
    if (pod.status === 'RUNNING') return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`pod ${id} did not reach RUNNING`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
