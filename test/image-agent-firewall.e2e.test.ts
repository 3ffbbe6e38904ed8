/**
 * The agent as a container, as docs/deploy.md "Container image" runs it (`--network host --user
 * root --cap-add NET_ADMIN`, the engine's socket mounted), on a GPU host whose Docker Engine has
 * its default network settings (iptables on): the documented `docker run` line, run through a
 * shell with only the socket, names, image tag, server, token and address made this test's, joins
 * a control plane and installs the container firewall with the image's own iptables, in the host's
 * network namespace. The host is a network namespace of the test's own (test/support/netns-engine.ts),
 * so nothing touches this machine's firewall; the image (CI builds it: .ci/build-image.sh) is
 * copied into that engine from the test engine.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { dockerEngine, noEngine } from './support/docker.js';
import { eventually, freePortRange } from './support/eventually.js';
import { netnsEnginesUnavailable, startNetnsEngine, type NetnsEngine } from './support/netns-engine.js';
import { runGantry, spawnGantry, type SpawnedGantry } from './support/spawn-gantry.js';

const run = promisify(execFile);
const IMAGE = process.env.GANTRY_TEST_IMAGE ?? 'gantry-test/gantry:ci';
const KEY = 'image-firewall-admin-key-0123456789abcdef';

// before any test is declared (test/test-registration.test.ts)
const engine = await dockerEngine();
const hasImage =
  engine !== null &&
  (await run('docker', ['--host', engine.dockerHost, 'image', 'ls', '-q', IMAGE]).then(
    (r) => r.stdout.trim() !== '',
    () => false,
  ));
const unavailable = !engine
  ? noEngine()
  : !hasImage
    ? `the image ${IMAGE} is not built (.ci/build-image.sh builds it; GANTRY_TEST_IMAGE names another)`
    : netnsEnginesUnavailable();
// CI builds the image and has what a namespace's engine needs: there a skip would hide a failure
if (unavailable && process.env.CI === 'true') throw new Error(`CI=true: ${unavailable}`);

/** The documented line of the agent as a container, continuation lines joined. */
const documentedLine = (): string => {
  const doc = readFileSync(join(import.meta.dirname, '..', 'docs', 'deploy.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Container image'), doc.indexOf('## Compose'));
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!.replace(/\\\n\s*/g, ''));
  const line = blocks.flatMap((b) => b.split('\n')).find((l) => l.startsWith('docker run') && l.includes(' agent '));
  assert.ok(line, 'docs/deploy.md "Container image" shows the agent as a container');
  return line;
};

describe(
  'the image as the agent, with the container firewall, beside an engine with iptables on',
  { skip: unavailable ?? false },
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'gantry-image-firewall-'));
    const dataDir = join(dir, 'control-plane');
    const env: Record<string, string> = { GANTRY_BOOTSTRAP_KEY: KEY };
    let host: NetnsEngine;
    let server: SpawnedGantry;
    const name = `gantry-agent-${process.pid}`;
    const docker = (...args: string[]) =>
      run('docker', ['--host', host.dockerHost, ...args], { maxBuffer: 16 << 20 }).then((r) => r.stdout.trim());

    before(async () => {
      host = await startNetnsEngine();
      // the image, from the test engine into the host's (no registry here)
      await new Promise<void>((resolve, reject) => {
        const save = spawn('docker', ['--host', engine!.dockerHost, 'save', IMAGE], {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        const load = spawn('docker', ['--host', host.dockerHost, 'load'], { stdio: ['pipe', 'ignore', 'inherit'] });
        save.stdout.pipe(load.stdin);
        load.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`docker load exited ${code}`))));
        save.once('error', reject);
      });
      const [port] = await freePortRange(1);
      const config = join(dir, 'config.json');
      writeFileSync(
        config,
        JSON.stringify({
          fleet: { heartbeatMs: 500, heartbeatTimeoutMs: 5_000, pollWaitMs: 5_000 },
          runtime: { kind: 'fleet' },
          proxy: { port: 0 },
          ssh: { enabled: false },
        }),
      );
      Object.assign(env, { GANTRY_CONFIG: config, GANTRY_PUBLIC_URL: `http://${host.hostAddress}:${port}` });
      server = await spawnGantry(['--host', host.hostAddress, '--port', String(port), '--data-dir', dataDir], env);
    });
    after(async () => {
      await host?.stop();
      await server?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    test('the documented line joins the control plane and installs the firewall in the host’s namespace with the image’s iptables', async () => {
      const token = runGantry(
        ['hosts', 'token', 'create', '--data-dir', dataDir, '--print', 'token'],
        env,
      ).stdout.trim();
      assert.match(token, /^gjt_/);
      const socket = host.dockerHost.replace(/^unix:\/\//, '');
      const line = documentedLine()
        .replace('--name gantry-agent ', `--name ${name} `)
        .replace('-v /var/run/docker.sock:/var/run/docker.sock', `-v ${socket}:/var/run/docker.sock`)
        .replace('-v gantry-agent:', `-v ${name}:`)
        .replace(' gantry agent ', ` ${IMAGE} agent `)
        .replace('https://gantry.example.com', env.GANTRY_PUBLIC_URL!)
        .replace(/--token \S+/, `--token ${token}`)
        .replace('--public-ip 203.0.113.10', `--public-ip ${host.engineAddress}`);
      for (const kept of ['--network host', '--user root', '--cap-add NET_ADMIN', '--restart unless-stopped'])
        assert.ok(line.includes(kept), `${kept} in: ${line}`);
      await run('bash', ['-c', line], { env: { ...process.env, DOCKER_HOST: host.dockerHost } });

      const logs = async () =>
        (
          await run('docker', ['--host', host.dockerHost, 'logs', '--tail', '40', name]).catch(
            (e: { stderr?: string }) => ({ stdout: '', stderr: e.stderr ?? '' }),
          )
        ).stderr;
      await eventually(
        async () => `the agent's host listed: ${await logs()}`,
        async () => {
          const listed = runGantry(['hosts', 'list', '--json', '--data-dir', dataDir], env);
          const hosts = JSON.parse(listed.stdout || '[]') as Array<{ status?: string; state?: string }>;
          return hosts.length === 1 ? hosts : null;
        },
        60_000,
        500,
      );
      const rules = await eventually(
        async () => `Gantry's chains in the host's firewall: ${await logs()}`,
        async () => {
          const listed = host.run(['iptables', '-S']).stdout;
          return /^-N GANTRY-\S+/m.test(listed) && /-A DOCKER-USER .*-j GANTRY-/m.test(listed) ? listed : null;
        },
        60_000,
        500,
      );
      assert.match(rules, /^-A INPUT .*-j GANTRY-/m, rules);
      // root in the container, with NET_ADMIN: what the firewall needs and nothing more than the line gives
      const added = await docker(
        'inspect',
        '-f',
        '{{json .HostConfig.CapAdd}} {{.Config.User}} {{.HostConfig.NetworkMode}}',
        name,
      );
      // the engine writes capabilities with or without their CAP_ prefix, by version
      assert.equal(added.replace('CAP_NET_ADMIN', 'NET_ADMIN'), '["NET_ADMIN"] root host');
      assert.equal(await docker('inspect', '-f', '{{.State.Running}}', name), 'true');
    });
  },
);
