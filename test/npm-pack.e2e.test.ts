/**
 * The npm package: `npm pack` of a clean copy of this tree (its `prepare` builds dist/, unless
 * dist/ is this very commit's build on an unchanged checkout, as after CI's npm ci) yields a
 * tarball that `npm install -g` into an empty prefix turns into a working `gantry` — the version,
 * `serve` with the console, the store commands, the client commands and the agent — holding no
 * sources, tests or source maps. Slow (the install compiles the native addons): one file, skipped
 * when the npm registry does not answer; `--prefer-offline` takes packages from the npm cache.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DockerClient } from '../src/runtime/docker/docker-client.js';
import { removeNamespace, uniqueNamespace } from './support/docker.js';
import { eventually } from './support/eventually.js';
import { spawnGantry, type SpawnedGantry } from './support/spawn-gantry.js';

const ROOT = join(import.meta.dirname, '..');
const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
const work = mkdtempSync(join(tmpdir(), 'gantry-npm-pack-'));
const servers: SpawnedGantry[] = [];
after(async () => {
  for (const s of servers) {
    await s.stop();
    // its output is no longer read: a pipe some descendant may still hold must not keep the file alive
    s.child.stdout?.destroy();
    s.child.stderr?.destroy();
  }
  rmSync(work, { recursive: true, force: true });
});

const run = (command: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}) =>
  spawnSync(command, args, {
    cwd: options.cwd ?? work,
    env: { ...process.env, ...options.env },
    encoding: 'utf8',
    timeout: 240_000,
    maxBuffer: 64 << 20,
  });

const ping = run('npm', ['ping']);
const offline =
  ping.status === 0 ? false : `the npm registry does not answer (npm ping: ${ping.stderr.trim().split('\n').at(-1)})`;

/** Files that must never be in the package: sources, tests, maps, build and editor state. */
const NOT_SHIPPED =
  /^(src|test|bench|scripts|console|\.ci)\/|(^|\/)node_modules\/|\.test\.|\.map$|\.tsbuildinfo$|(^|\/)\.env|\.(ts|tsx)$(?<!\.d\.ts)/;

test(
  'npm pack yields a package that npm install -g turns into a working gantry: serve with the console, the CLI and the agent',
  { skip: offline },
  async (t) => {
    // a clean copy of the tree as git sees it (committed or not, never what .gitignore names), with
    // the checkout's dev dependencies for the build that `prepare` runs
    const tree = join(work, 'tree');
    const listed = run('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: ROOT });
    assert.equal(listed.status, 0, listed.stderr);
    for (const file of listed.stdout.split('\0').filter(Boolean)) {
      mkdirSync(dirname(join(tree, file)), { recursive: true });
      cpSync(join(ROOT, file), join(tree, file));
    }
    symlinkSync(join(ROOT, 'node_modules'), join(tree, 'node_modules'));
    const commit = run('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: ROOT }).stdout.trim();

    // dist/ as this commit's `prepare` built it (npm ci ran it, as CI does on a clean clone) is
    // packed as it is: building it again here would take the file past its time on a loaded
    // machine. A checkout with changes, or a dist/ of another commit, is built by `npm pack`.
    const builtAt = (() => {
      try {
        return (JSON.parse(readFileSync(join(ROOT, 'dist', 'build-info.json'), 'utf8')) as { commit?: string }).commit;
      } catch {
        return undefined;
      }
    })();
    const unchanged = run('git', ['status', '--porcelain'], { cwd: ROOT }).stdout.trim() === '';
    const reuse = unchanged && builtAt === commit && existsSync(join(ROOT, 'dist', 'console', 'index.html'));
    if (reuse) cpSync(join(ROOT, 'dist'), join(tree, 'dist'), { recursive: true });
    t.diagnostic(reuse ? `packing dist/ as built at ${commit} (npm ci's prepare)` : 'npm pack builds dist/ (prepare)');
    const packed = run('npm', ['pack', '--json', '--pack-destination', work, ...(reuse ? ['--ignore-scripts'] : [])], {
      cwd: tree,
      env: { GANTRY_BUILD_COMMIT: commit },
    });
    assert.equal(packed.status, 0, packed.stderr);
    const [pack] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as Array<{
      filename: string;
      size: number;
      unpackedSize: number;
      files: Array<{ path: string }>;
    }>;
    const paths = pack!.files.map((f) => f.path);
    for (const needed of [
      'package.json',
      'README.md',
      'bin/gantry.js',
      'dist/cli/main.js',
      'dist/bundle/main.js',
      'dist/build-info.json',
      'dist/main.js',
      'dist/worker/index.js',
      'dist/worker/index.d.ts',
      'dist/console/index.html',
      'docs/deploy.md',
    ])
      assert.ok(paths.includes(needed), `the package holds ${needed}`);
    assert.deepEqual(
      paths.filter((p) => NOT_SHIPPED.test(p)),
      [],
      'no source, test, map or dev file is shipped',
    );
    t.diagnostic(
      `package: ${pack!.filename}, ${pack!.files.length} files, ${pack!.size} bytes packed, ${pack!.unpackedSize} unpacked`,
    );
    assert.ok(pack!.size < 4 << 20, `the tarball stays under 4 MiB (${pack!.size} bytes)`);

    const prefix = join(work, 'prefix');
    const installed = run(
      'npm',
      ['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', join(work, pack!.filename)],
      { env: { JOBS: 'max' } },
    );
    assert.equal(installed.status, 0, installed.stderr);
    // as an operator runs it: the linked binary on PATH, found by its shebang's `env node`
    const bin = join(prefix, 'bin', 'gantry');
    const PATH = `${dirname(process.execPath)}:${process.env.PATH ?? ''}`;
    const gantry = (args: string[], env: Record<string, string> = {}) =>
      run(bin, args, { env: { PATH, GANTRY_DATABASE_URL: '', ...env } });

    const shown = gantry(['--version']);
    assert.equal(shown.stdout, `gantry ${version} (${commit})\n`, shown.stderr);

    const dataDir = join(work, 'data');
    const KEY = 'npm-pack-test-admin-key-0123456789';
    const server = await spawnGantry(
      ['--data-dir', dataDir],
      { PATH, GANTRY_BOOTSTRAP_KEY: KEY, GANTRY_DATABASE_URL: '' },
      60_000,
      {
        command: [join(prefix, 'lib', 'node_modules', 'gantry', 'bin', 'gantry.js'), 'serve', '--port', '0'],
      },
    );
    servers.push(server);
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
    const page = await fetch(`${server.url}/console/`);
    assert.equal(page.status, 200);
    const html = await page.text();
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    assert.ok(script, `the console page loads its script: ${html.slice(0, 300)}`);
    const asset = await fetch(`${server.url}${script}`);
    assert.deepEqual([asset.status, asset.headers.get('content-type')], [200, 'text/javascript; charset=utf-8']);

    const accounts = gantry(['accounts', 'list', '--data-dir', dataDir]);
    assert.match(accounts.stdout, /\tadmin\t/, accounts.stderr);
    const pods = gantry(['pods', 'list', '--json'], {
      GANTRY_URL: server.url,
      GANTRY_API_KEY: KEY,
      GANTRY_CLI_CONFIG: join(work, 'none.json'),
    });
    assert.equal(pods.status, 0, pods.stderr);
    assert.deepEqual(JSON.parse(pods.stdout), []);
    const token = gantry(['hosts', 'token', 'create', '--data-dir', dataDir]).stdout.trim();
    assert.match(token, /^gjt_/);

    // the agent: with no engine it says so (exit 1); with one (DOCKER_HOST), it joins
    const agentArgs = [
      'agent',
      '--server',
      server.url,
      '--token',
      token,
      '--name',
      'npm-host',
      '--public-ip',
      '127.0.0.1',
    ];
    const noEngine = gantry([
      ...agentArgs,
      '--data-dir',
      join(work, 'agent-none'),
      '--docker-host',
      `unix://${join(work, 'no.sock')}`,
    ]);
    assert.equal(noEngine.status, 1, noEngine.stderr);
    assert.match(noEngine.stderr, /cannot reach the Docker Engine/);

    const dockerHost = process.env.DOCKER_HOST || 'unix:///var/run/docker.sock';
    const client = new DockerClient({ dockerHost, timeoutMs: 30_000 });
    const engine = await client.ping(1_000).then(
      () => true,
      () => false,
    );
    if (!engine) {
      client.close();
      return t.diagnostic(`no Docker Engine at ${dockerHost}: the agent's join was not tried`);
    }
    const namespace = uniqueNamespace();
    const agent = spawn(
      bin,
      [...agentArgs, '--data-dir', join(work, 'agent'), '--namespace', namespace, '--firewall', 'off'],
      {
        env: { ...process.env, PATH, DOCKER_HOST: dockerHost, GANTRY_AGENT_TOKEN: '', GANTRY_AGENT_SERVER: '' },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let agentErr = '';
    agent.stderr.on('data', (d: Buffer) => (agentErr += d.toString()));
    try {
      await eventually(
        () => `the installed agent listed as a host: ${agentErr}`,
        async () => {
          const hosts = gantry(['hosts', 'list', '--json', '--data-dir', dataDir]);
          return (JSON.parse(hosts.stdout || '[]') as Array<{ name: string }>).some((h) => h.name === 'npm-host');
        },
        60_000,
        500,
      );
    } finally {
      if (agent.exitCode === null) {
        const exited = new Promise((r) => agent.once('exit', r));
        agent.kill('SIGTERM');
        await exited;
      }
      await removeNamespace(client, namespace);
      client.close();
    }
  },
);
