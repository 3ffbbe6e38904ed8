/**
 * The isolation tests' attacker's kit: test/fixtures/netprobe.c built static with this machine's
 * gcc (once per source, under the temp dir) and copied into images — a busybox pod image and a
 * serverless worker image (the Node worker library's echo handler) — so every attack runs from
 * inside a real container, pod or worker. Commands run in containers through `docker exec`.
 */
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { DockerClient } from '../../src/runtime/docker/docker-client.js';
import { buildImage } from './docker-images.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const SOURCE = join(ROOT, 'test', 'fixtures', 'netprobe.c');

/** Why netprobe cannot be built here, or null. */
export function netprobeUnavailable(): string | null {
  if (spawnSync('sh', ['-c', 'command -v gcc']).status !== 0)
    return 'gcc is not installed (apt-get install gcc libc6-dev)';
  if (!existsSync('/usr/lib/x86_64-linux-gnu/libc.a') && !existsSync('/usr/lib/aarch64-linux-gnu/libc.a'))
    return 'the static C library is not installed (apt-get install libc6-dev)';
  return null;
}

/** The static netprobe binary, built when its source changed. */
function netprobeBinary(): string {
  const hash = createHash('sha256').update(readFileSync(SOURCE)).digest('hex').slice(0, 12);
  const out = join(tmpdir(), `gantry-netprobe-${hash}`);
  if (existsSync(out)) return out;
  const building = `${out}.${process.pid}`;
  const r = spawnSync('gcc', ['-static', '-O2', '-Wall', '-o', building, SOURCE], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`building netprobe: ${r.stderr}`);
  renameSync(building, out);
  return out;
}

const NETPROBE = (): { from: string; to: string; mode: number } => ({
  from: netprobeBinary(),
  to: '/bin/netprobe',
  mode: 0o755,
});

/** busybox and netprobe; runs until stopped. */
export const netprobeImage = (client: DockerClient): Promise<string> =>
  buildImage(client, {
    name: 'netprobe',
    files: [NETPROBE()],
    changes: [`CMD ["/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"]`],
  });

/** A serverless worker (the Node worker library, an echo handler) with netprobe beside it. */
export function netprobeWorkerImage(client: DockerClient): Promise<string> {
  const workerDir = join(ROOT, 'dist', 'worker');
  return buildImage(client, {
    name: 'netprobe-worker',
    node: true,
    files: [
      NETPROBE(),
      { from: join(ROOT, 'test', 'fixtures', 'container-echo-worker.mjs'), to: '/app/handler.mjs' },
      ...readdirSync(workerDir)
        .filter((f) => f.endsWith('.js'))
        .map((f) => ({ from: join(workerDir, f), to: `/app/worker/${f}` })),
    ],
    changes: ['ENTRYPOINT ["/usr/local/bin/node", "/app/handler.mjs"]'],
  });
}

/** Runs `argv` in the container (`docker exec`); resolves with what it printed, whatever its exit status. */
export function inContainer(
  dockerHost: string,
  container: string,
  argv: string[],
  timeoutMs = 120_000,
): Promise<string> {
  return new Promise((resolvePrinted, reject) => {
    execFile(
      'docker',
      ['-H', dockerHost, 'exec', container, ...argv],
      { timeout: timeoutMs, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (err?.killed) return reject(new Error(`docker exec ${argv.join(' ')} timed out`));
        // an exit status of its own is an answer; anything else (no docker, no engine) is not
        if (err && typeof err.code !== 'number') return reject(new Error(err.message));
        resolvePrinted(`${stdout}${stderr}`.trim());
      },
    );
  });
}

/** Whether a TCP connection from the container reaches `ip:port`: `open` and `refused` both mean it does. */
export async function reaches(
  dockerHost: string,
  container: string,
  ip: string,
  port: number,
): Promise<{ reached: boolean; said: string }> {
  const said = await inContainer(dockerHost, container, ['netprobe', 'connect', ip, String(port), '3000']);
  if (said === 'open' || said === 'refused') return { reached: true, said };
  if (said === 'timeout' || said.startsWith('error=')) return { reached: false, said };
  throw new Error(`netprobe connect said "${said}"`);
}

/**
 * The positive control of the reachability checks: a container of `image` the engine runs outside
 * Gantry, on its default bridge, with Docker's default capabilities and no firewall of Gantry's.
 */
export async function startOutsider(client: DockerClient, image: string, name: string): Promise<string> {
  const made = await client.createContainer(name, {
    Image: image,
    Env: [],
    Labels: {},
    Tty: false,
    OpenStdin: false,
    AttachStdin: false,
    AttachStdout: false,
    AttachStderr: false,
    HostConfig: { RestartPolicy: { Name: 'no' } },
  });
  await client.startContainer(made.Id);
  return made.Id;
}
