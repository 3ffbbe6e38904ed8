// Gantry's container image, start to healthy (docs/deploy.md "Container image"; goal ≤ 2 s):
//   node --import tsx bench/image-start.ts [--rounds 5] [--image gantry-test/gantry:ci]
// Each round, in turn: `docker run` of the image (a new container on a data volume a first start
// already set up: create, start, the server's start) and `docker start` of a stopped container
// of it (the start alone), both on the host's network, measured from the command to the first 200
// from `/healthz` (polled every 10 ms), and for `docker run` also to the engine's `healthy` (the
// image's HEALTHCHECK, every second); and, as the peer in the same run, the same build run from
// the checkout as a process (`node bin/gantry.js serve` on a data dir set up the same way).
// The engine is DOCKER_HOST's; the image is built by .ci/build-image.sh.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, percentile } from './support/gantry.js';

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '5' }, image: { type: 'string', default: 'gantry-test/gantry:ci' } },
});
const ROUNDS = Number(values.rounds);
const IMAGE = values.image;
const DOCKER = ['--host', process.env.DOCKER_HOST || 'unix:///var/run/docker.sock'];
const docker = (...args: string[]) => execFileSync('docker', [...DOCKER, ...args], { encoding: 'utf8' }).trim();
const here = join(import.meta.dirname, '..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function untilHealthy(port: number, from: number): Promise<number> {
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`)
      .then((r) => r.ok)
      .catch(() => false);
    if (ok) return performance.now() - from;
    if (performance.now() - from > 60_000) throw new Error(`port ${port} never answered /healthz`);
    await sleep(10);
  }
}

const portsEnv = async () => {
  const port = await freePort();
  return { port, env: ['-e', `PORT=${port}`, '-e', 'GANTRY_PROXY_PORT=0', '-e', 'GANTRY_SSH_PORT=0'] };
};

const volume = `gantry-bench-image-${process.pid}`;
const containers: string[] = [];
const dir = mkdtempSync(join(tmpdir(), 'gantry-bench-image-'));
const results: Record<string, number[]> = {
  'docker run': [],
  'run→healthy': [],
  'docker start': [],
  'process (peer)': [],
};

/** From `from` until the engine reports the container healthy (its HEALTHCHECK passed). */
async function untilDockerHealthy(id: string, from: number): Promise<number> {
  while (docker('inspect', '-f', '{{.State.Health.Status}}', id) !== 'healthy') {
    if (performance.now() - from > 60_000) throw new Error(`container ${id} never turned healthy`);
    await sleep(20);
  }
  return performance.now() - from;
}
try {
  // the first start of each: the data volume and data dir set up outside the measured rounds
  const first = await portsEnv();
  const c0 = docker('run', '-d', '--network', 'host', ...first.env, '-v', `${volume}:/var/lib/gantry`, IMAGE);
  containers.push(c0);
  await untilHealthy(first.port, performance.now());
  docker('stop', c0);
  const proc0 = await freePort();
  const child0 = spawn(
    process.execPath,
    [join(here, 'bin/gantry.js'), 'serve', '--port', String(proc0), '--data-dir', dir],
    {
      stdio: 'ignore',
      env: { ...process.env, GANTRY_PROXY_PORT: '0', GANTRY_SSH_PORT: '0' },
    },
  );
  await untilHealthy(proc0, performance.now());
  child0.kill('SIGTERM');
  await new Promise((r) => child0.once('exit', r));

  for (let round = 0; round < ROUNDS; round++) {
    const run = await portsEnv();
    let t = performance.now();
    const c = docker('run', '-d', '--network', 'host', ...run.env, '-v', `${volume}:/var/lib/gantry`, IMAGE);
    containers.push(c);
    results['docker run']!.push(await untilHealthy(run.port, t));
    results['run→healthy']!.push(await untilDockerHealthy(c, t));
    docker('stop', c);
    t = performance.now();
    docker('start', c);
    results['docker start']!.push(await untilHealthy(run.port, t));
    docker('stop', c);

    const port = await freePort();
    t = performance.now();
    const child = spawn(
      process.execPath,
      [join(here, 'bin/gantry.js'), 'serve', '--port', String(port), '--data-dir', dir],
      {
        stdio: 'ignore',
        env: { ...process.env, GANTRY_PROXY_PORT: '0', GANTRY_SSH_PORT: '0' },
      },
    );
    results['process (peer)']!.push(await untilHealthy(port, t));
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
} finally {
  for (const c of containers) docker('rm', '-f', c);
  docker('volume', 'rm', '-f', volume);
  rmSync(dir, { recursive: true, force: true });
}

const peer = percentile(
  [...results['process (peer)']!].sort((a, b) => a - b),
  50,
);
console.log(
  `image ${IMAGE} (${Math.round(Number(docker('image', 'inspect', '-f', '{{.Size}}', IMAGE)) / 1e6)} MB), ${ROUNDS} rounds`,
);
console.log('path            p50 ms  max ms  ×process');
for (const [name, list] of Object.entries(results)) {
  const sorted = [...list].sort((a, b) => a - b);
  const p50 = percentile(sorted, 50);
  console.log(
    `${name.padEnd(15)} ${String(Math.round(p50)).padStart(6)}  ${String(Math.round(sorted.at(-1)!)).padStart(6)}  ${(p50 / peer).toFixed(2)}`,
  );
}
const worst = percentile(
  [...results['docker run']!].sort((a, b) => a - b),
  50,
);
console.log(
  `goal: start to healthy ≤ 2000 ms — docker run p50 ${Math.round(worst)} ms: ${worst <= 2000 ? 'met' : 'NOT met'}`,
);
