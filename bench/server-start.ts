// Server start to ready, by step, in the deployed shape (`gantry serve` as its own process):
//   node --import tsx bench/server-start.ts [--rounds 3] [--before DIR] [--runtimes process,docker]
// Each round starts the server on a data dir a first start already set up (so no admin account
// is created in the measured start), once per runtime: the process runtime and, when an engine
// answers at DOCKER_HOST, the Docker runtime (its own namespace, a stand-in nvidia-smi reporting
// 256 GPUs, firewall off: the shape of bench/docker.ts section 4's peer). Measured from the spawn:
// to the first 200 from `/readyz` (polled every 5 ms from the spawn on; a build without `/readyz`,
// which listens only once adoption is done, is ready at its first 404), and to the
// `gantry listening` line on stdout (printed once the whole start, SSH proxy included, is done).
// With --before DIR (another checkout, built), its server runs in alternation with this one, round
// by round, and the table shows both. The ready line's `startup` steps are printed per run.
// Goal: spawn → ready <= 1000 ms with either runtime.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DockerClient } from '../src/runtime/docker/docker-client.js';
import { removeNamespace } from '../test/support/docker.js';
import { freePort, percentile, verdict } from './support/gantry.js';
import { ensureBuilt, printTable, startChild, type Child } from './support/processes.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    before: { type: 'string' },
    runtimes: { type: 'string', default: 'process,docker' },
  },
});
const ROUNDS = Number(values.rounds);
const DOCKER_HOST = process.env.DOCKER_HOST || 'unix:///var/run/docker.sock';
const here = join(import.meta.dirname, '..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ms = (n: number) => Math.round(n);
const median = (a: number[]) =>
  percentile(
    [...a].sort((x, y) => x - y),
    50,
  );

/** A stand-in nvidia-smi reporting `count` RTX 4090s (as bench/docker.ts uses). */
function standInNvidiaSmi(dir: string, count: number): string {
  const csv = Array.from(
    { length: count },
    (_, i) => `${i}, GPU-6f1c2a57-3b1e-4c3d-9a41-${i.toString(16).padStart(12, '0')}, NVIDIA GeForce RTX 4090, 24564`,
  ).join('\n');
  const path = join(dir, 'nvidia-smi');
  writeFileSync(
    path,
    `#!/bin/sh\ncase "$1" in\n  --query-gpu=*) cat <<'CSV'\n${csv}\nCSV\n;;\n  *) echo '| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |';;\nesac\n`,
  );
  chmodSync(path, 0o755);
  return path;
}

interface Setup {
  label: string;
  root: string;
  runtime: 'process' | 'docker';
  dataDir: string;
  configPath: string;
  namespace: string | null;
}

interface Run {
  listening: number;
  ready: number;
  steps: Record<string, number>;
}

async function startOnce(s: Setup): Promise<{ child: Child; run: Run }> {
  // A port known before the spawn, so `/readyz` is polled from the first moment it could answer.
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const t0 = performance.now();
  let stopPolling = false;
  // ready: the first 200 from /readyz; a build without it (404) listens only once adoption is done
  const polling = (async (): Promise<number> => {
    while (!stopPolling) {
      const res = await fetch(`${base}/readyz`).catch(() => null);
      if (res) await res.arrayBuffer();
      if (res?.status === 200 || res?.status === 404) return performance.now() - t0;
      await sleep(5);
    }
    return NaN;
  })();
  let child: Child;
  try {
    child = await startChild(
      [
        join(s.root, 'bin', 'gantry.js'),
        'serve',
        '--port',
        String(port),
        '--host',
        '127.0.0.1',
        '--data-dir',
        s.dataDir,
        '--config',
        s.configPath,
      ],
      { GANTRY_LOG_LEVEL: 'info', DOCKER_HOST },
      /gantry listening on (\S+)/,
      // a generous ceiling: on a shared machine under load a start can take many times its quiet time
      300_000,
    );
  } catch (err) {
    stopPolling = true;
    throw err;
  }
  const listening = performance.now() - t0;
  const ready = await polling;
  // the ready line is logged once adoption and reconcile are done; wait for it (a few ms at most)
  let line: string | undefined;
  for (let i = 0; i < 200 && !line; i++) {
    line = child
      .output()
      .split('\n')
      .find((l) => l.includes('"gantry is ready"'));
    if (!line) await sleep(5);
  }
  const steps = line ? ((JSON.parse(line) as { startup?: Record<string, number> }).startup ?? {}) : {};
  return { child, run: { listening, ready, steps } };
}

async function main(): Promise<void> {
  ensureBuilt();
  const roots: Array<{ label: string; root: string }> = [];
  if (values.before) {
    const before = resolve(values.before);
    if (!existsSync(join(before, 'dist', 'cli', 'main.js')))
      throw new Error(`${before}: no dist/ (run npm run build there first)`);
    roots.push({ label: 'before', root: before });
  }
  roots.push({ label: values.before ? 'after' : 'this', root: here });
  const runtimes = values.runtimes.split(',').map((r) => r.trim()) as Array<'process' | 'docker'>;
  const scratch = mkdtempSync(join(tmpdir(), 'gantry-bench-start-'));
  const client = new DockerClient({ dockerHost: DOCKER_HOST, timeoutMs: 30_000 });
  const engine = await client.ping(10_000).then(
    () => true,
    () => false,
  );
  if (runtimes.includes('docker') && !engine)
    console.log(`no Docker Engine at ${DOCKER_HOST}: the docker rows are skipped`);
  const nvidiaSmi = standInNvidiaSmi(scratch, 256);
  const setups: Setup[] = [];
  try {
    for (const runtime of runtimes) {
      if (runtime === 'docker' && !engine) continue;
      for (const { label, root } of roots) {
        const dataDir = mkdtempSync(join(scratch, `${label}-${runtime}-`));
        const namespace =
          runtime === 'docker' ? `bs${process.pid.toString(36)}${randomBytes(3).toString('hex')}` : null;
        const config =
          runtime === 'docker'
            ? {
                runtime: {
                  kind: 'docker',
                  docker: {
                    namespace,
                    bindIp: '127.0.0.1',
                    publicIp: '127.0.0.1',
                    nvidiaSmi,
                    gpuMode: 'env-only',
                    diskGb: 100_000,
                    firewall: { mode: 'off' },
                  },
                },
              }
            : {};
        const configPath = join(dataDir, 'bench-config.json');
        writeFileSync(configPath, JSON.stringify(config));
        const setup = { label, root, runtime, dataDir, configPath, namespace };
        setups.push(setup);
        // the first start creates the admin account and the schema: not what is measured
        const first = await startOnce(setup);
        await first.child.stop();
      }
    }
    const runs = new Map<Setup, Run[]>(setups.map((s) => [s, []]));
    for (let round = 0; round < ROUNDS; round++) {
      // alternate which build goes first each round
      const order = round % 2 === 0 ? setups : [...setups].reverse();
      for (const s of order) {
        const { child, run } = await startOnce(s);
        await child.stop();
        runs.get(s)!.push(run);
        console.log(
          `round ${round + 1} ${s.label} ${s.runtime}: listening ${ms(run.listening)} ms, ready ${ms(run.ready)} ms, steps ${JSON.stringify(run.steps)}`,
        );
      }
    }
    console.log(`\nServer start (spawn → ready), ${ROUNDS} rounds, node ${process.version}\n`);
    printTable(
      setups.map((s) => {
        const r = runs.get(s)!;
        return {
          build: s.label,
          runtime: s.runtime,
          'stdout line p50 ms': ms(median(r.map((x) => x.listening))),
          'ready p50 ms': ms(median(r.map((x) => x.ready))),
          'ready runs ms': r.map((x) => ms(x.ready)).join(' / '),
          'ready spread ms': ms(Math.max(...r.map((x) => x.ready)) - Math.min(...r.map((x) => x.ready))),
        };
      }),
    );
    console.log('\nper step, median of the rounds (ms, from the ready line):\n');
    printTable(
      setups.map((s) => {
        const r = runs.get(s)!;
        const names = [...new Set(r.flatMap((x) => Object.keys(x.steps)))];
        return {
          build: s.label,
          'runtime kind': s.runtime,
          ...Object.fromEntries(names.map((n) => [n, ms(median(r.map((x) => x.steps[n] ?? 0)))])),
        };
      }),
    );
    const mine = setups.filter((s) => s.root === here);
    const ok = mine.every((s) => median(runs.get(s)!.map((x) => x.ready)) <= 1_000);
    console.log(`\ngoal: spawn → ready <= 1000 ms (${roots.at(-1)!.label}): ${verdict(ok)}`);
    if (!ok) process.exitCode = 1;
  } finally {
    for (const s of setups) if (s.namespace) await removeNamespace(client, s.namespace).catch(() => undefined);
    client.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
