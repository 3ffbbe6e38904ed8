/**
 * A real container registry with authentication, for the private-image tests: Debian's
 * `docker-registry` (the distribution project's registry) with htpasswd users (`htpasswd -Bbn`
 * from apache2-utils), listening on 127.0.0.1 on a free port. The Docker Engine treats registries
 * on 127.0.0.0/8 as plain-HTTP (insecure) ones by default, and the test engines share the host's
 * network, so they pull from it as from any registry. Images are pushed into it through the
 * Engine API (tag, push with a credential, untag), so the engine holds no tag of the registry's
 * until a test pulls one.
 *
 * Where docker-registry or htpasswd is missing, {@link registryUnavailable} says why so a suite can
 * skip; under CI=true that is a failure (.ci/run installs both).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DockerClient } from '../../src/runtime/docker/docker-client.js';
import { registryAuthHeader } from '../../src/runtime/docker/engine-images.js';
import { privateImageVolumeName } from '../../src/runtime/docker/private-image-ledger.js';
import { freePort } from '../../src/runtime/runtime-contract.js';
import { eventually } from './eventually.js';

const has = (command: string): boolean =>
  spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).status === 0;

/** Why no test registry can run here, or null when one can. Throws under CI=true. */
export function registryUnavailable(): string | null {
  const missing = ['docker-registry', 'htpasswd'].filter((c) => !has(c));
  if (missing.length === 0) return null;
  const reason = `the private-image tests need a real registry: ${missing.join(' and ')} not installed (apt-get install docker-registry apache2-utils)`;
  if (process.env.CI === 'true') throw new Error(`CI=true: ${reason}`);
  return reason;
}

export interface TestRegistry {
  /** `127.0.0.1:<port>`: the registry part of the references it serves */
  readonly address: string;
  /** Stops it (as a registry that went down); its storage is kept. */
  stop(): Promise<void>;
  /** Starts it again on the same address, with the same images and users (running already: nothing). */
  start(): Promise<void>;
  /** Stops it and removes its storage. */
  close(): Promise<void>;
}

/**
 * A registry whose only users are `users` (name → password): anonymous requests are refused. With
 * `users` null it asks for no credential (a public registry; it ignores one sent).
 */
export async function startRegistry(users: Record<string, string> | null): Promise<TestRegistry> {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-registry-'));
  const htpasswd = Object.entries(users ?? {})
    .map(([name, password]) => {
      const out = spawnSync('htpasswd', ['-Bbn', name, password], { encoding: 'utf8' });
      if (out.status !== 0) throw new Error(`htpasswd failed: ${out.stderr}`);
      return out.stdout.trim();
    })
    .join('\n');
  writeFileSync(join(dir, 'htpasswd'), `${htpasswd}\n`);
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  writeFileSync(
    join(dir, 'config.yml'),
    [
      'version: 0.1',
      'log:',
      '  level: error',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${join(dir, 'data')}`,
      'http:',
      `  addr: ${address}`,
      ...(users ? ['auth:', '  htpasswd:', '    realm: gantry-test', `    path: ${join(dir, 'htpasswd')}`] : []),
      '',
    ].join('\n'),
  );
  let child: ChildProcess | null = null;
  let log = '';
  const start = async (): Promise<void> => {
    if (child && child.exitCode === null) return;
    const proc = spawn('docker-registry', ['serve', join(dir, 'config.yml')], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    proc.stdout.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-10_000)));
    proc.stderr.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-10_000)));
    await eventually(
      () => `the registry at ${address} to answer (its log: ${log.slice(-2_000)})`,
      async () => {
        if (proc.exitCode !== null)
          throw new Error(`docker-registry exited with ${proc.exitCode}: ${log.slice(-2_000)}`);
        return (await status(`http://${address}/v2/`)) === (users ? 401 : 200);
      },
      30_000,
      50,
    );
  };
  const stop = async (): Promise<void> => {
    const proc = child;
    child = null;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGTERM');
    await exited;
  };
  await start();
  return {
    address,
    stop,
    start,
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The HTTP status `url` answers, or null when nothing answers. */
function status(url: string): Promise<number | null> {
  return new Promise((resolve) => {
    const req = request(url, { timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? null);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(null));
    req.end();
  });
}

/**
 * Pushes the engine's image `source` to `target` (`<registry>/<path>:<tag>`) with `auth`, through
 * the Engine API at `dockerHost` (a unix socket), then removes the engine's `target` tag: the engine
 * keeps the image only under `source`, so a test's first pull of `target` is a real pull.
 */
export async function pushImage(
  dockerHost: string,
  source: string,
  target: string,
  auth: { username: string; password: string },
): Promise<void> {
  const colon = target.lastIndexOf(':');
  const [repo, tag] = [target.slice(0, colon), target.slice(colon + 1)];
  const registry = repo.slice(0, repo.indexOf('/'));
  const enc = encodeURIComponent;
  await engine(dockerHost, 'POST', `/images/${enc(source)}/tag?repo=${enc(repo)}&tag=${enc(tag)}`);
  await engine(dockerHost, 'POST', `/images/${enc(repo)}/push?tag=${enc(tag)}`, {
    'x-registry-auth': registryAuthHeader(auth, registry),
  });
  await engine(dockerHost, 'DELETE', `/images/${enc(target)}`);
}

/**
 * Removes what the tests left on the engine for `registry`: the tags (and digests) of its images
 * and the private-image records of `repositories`. The images' content stays while another tag
 * (the test image it was pushed from) holds it.
 */
export async function forgetRegistry(
  client: DockerClient,
  dockerHost: string,
  registry: string,
  repositories: string[],
): Promise<void> {
  const images = JSON.parse(await engine(dockerHost, 'GET', '/images/json')) as Array<{
    RepoTags: string[] | null;
    RepoDigests: string[] | null;
  }>;
  for (const image of images)
    for (const ref of [...(image.RepoTags ?? []), ...(image.RepoDigests ?? [])])
      if (ref.startsWith(`${registry}/`))
        await engine(dockerHost, 'DELETE', `/images/${encodeURIComponent(ref)}`).catch(() => '');
  for (const repository of repositories) await client.removeVolume(privateImageVolumeName(repository));
}

/** One Engine API call over its unix socket, read to the end; an error status, or an error in a progress stream, rejects. */
function engine(
  dockerHost: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<string> {
  if (!dockerHost.startsWith('unix://'))
    throw new Error(`the registry helper talks to unix sockets, not ${dockerHost}`);
  return new Promise((resolve, reject) => {
    const req = request(
      { socketPath: dockerHost.slice('unix://'.length), method, path, headers, timeout: 120_000 },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => {
          const failed = (res.statusCode ?? 500) >= 400 ? body : /"error(Detail)?":/.test(body) ? body : null;
          if (failed !== null) reject(new Error(`${method} ${path}: ${res.statusCode}: ${failed.slice(-500)}`));
          else resolve(body);
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer`)));
    req.on('error', reject);
    req.end();
  });
}
