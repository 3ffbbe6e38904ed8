/**
 * `gantry agent` as a process, against a control plane speaking the agent protocol over HTTP.
 * That control plane is test/support/agent-protocol-server.ts: a seam standing in for the real
 * /agent/v1 routes until they land; the fleet's integration runs the agent against gantry serve.
 * The agent discovers its host on the real Docker Engine (DOCKER_HOST), GPUs from a stand-in
 * nvidia-smi.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JOIN_TOKEN_INVALID_MESSAGE } from '../src/agent/agent-fatal.js';
import { AgentProtocolServer } from './support/agent-protocol-server.js';
import { dockerEngine, noEngine, removeNamespace, uniqueNamespace } from './support/docker.js';
import { BANNER_12_4, TWO_4090, removeStandIns, standInNvidiaSmi } from './support/nvidia-smi.js';
import { runGantry } from './support/spawn-gantry.js';
import { spawnAgent, type SpawnedAgent } from './support/spawn-agent.js';

const engine = await dockerEngine();
const root = mkdtempSync(join(tmpdir(), 'gantry-agent-cli-'));
const agents: SpawnedAgent[] = [];
const namespaces: string[] = [];
let server: AgentProtocolServer;
before(async () => {
  server = await AgentProtocolServer.start();
});
after(async () => {
  await Promise.all(agents.map((a) => a.stop('SIGKILL')));
  await server.close();
  if (engine) for (const ns of namespaces) await removeNamespace(engine.client, ns);
  removeStandIns();
  rmSync(root, { recursive: true, force: true });
});

const skip = engine ? false : noEngine();

function agentArgs(dataDir: string, extra: string[] = []): string[] {
  const namespace = uniqueNamespace();
  namespaces.push(namespace);
  return [
    '--data-dir',
    dataDir,
    '--namespace',
    namespace,
    '--name',
    'gpu-07',
    '--public-ip',
    '127.0.0.1',
    '--port-range',
    '41000-41099',
    ...extra,
  ];
}

function start(args: string[], env: Record<string, string> = {}): SpawnedAgent {
  const agent = spawnAgent(args, { DOCKER_HOST: engine?.dockerHost ?? '', ...env });
  agents.push(agent);
  return agent;
}

async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

test(
  'the agent joins with its token through the second URL when the first does not answer, stores its credential 0600 in a 0700 dir, and stops on SIGTERM after a last report',
  { skip },
  async () => {
    const dataDir = join(root, 'joined', 'data');
    const token = server.token();
    const nvidia = standInNvidiaSmi({ csv: TWO_4090, banner: BANNER_12_4 });
    const servers = `http://127.0.0.1:${await closedPort()},${server.url}`;
    const agent = start(
      agentArgs(dataDir, ['--server', servers, '--nvidia-smi', nvidia.path, '--gpu-mode', 'env-only']),
      { GANTRY_AGENT_TOKEN: token },
    );
    const first = await server.report(() => true, 'after the join');
    const join0 = server.joins.at(-1)!;
    assert.deepEqual(
      [
        join0.name,
        join0.publicIp,
        join0.portRange,
        join0.capacity.gpus.map((g) => [g.name, g.memoryMb]),
        join0.capacity.cudaVersion,
        join0.capacity.gpuMode,
      ],
      [
        'gpu-07',
        '127.0.0.1',
        [41000, 41099],
        [
          ['NVIDIA GeForce RTX 4090', 24564],
          ['NVIDIA GeForce RTX 4090', 24564],
        ],
        '12.4',
        'env-only',
      ],
    );
    assert.deepEqual(first.body.instances, { full: true, items: [] });

    const credentialPath = join(dataDir, 'credential.json');
    assert.equal(statSync(dataDir).mode & 0o777, 0o700);
    assert.equal(statSync(credentialPath).mode & 0o777, 0o600);
    const stored = JSON.parse(readFileSync(credentialPath, 'utf8')) as { hostId: string; credential: string };
    assert.equal(stored.hostId, first.hostId);
    assert.equal(stored.credential, server.hosts.get(first.hostId)!.credential);

    const reports = server.reports.length;
    const exit = await agent.stop('SIGTERM');
    assert.deepEqual(exit, { code: 0, signal: null });
    assert.ok(server.reports.length > reports, 'a last report went out at stop');
    assert.ok(!agent.output().includes(token), 'the token is never printed');
    assert.ok(!agent.output().includes(stored.credential), 'the credential is never printed');

    // Started again without a token: the stored credential is used, nothing joins.
    const joins = server.joins.length;
    const before = server.reports.length;
    const again = start(agentArgs(dataDir, ['--server', server.url, '--nvidia-smi', nvidia.path]));
    const resumed = await server.report((_r, i) => i >= before, 'from the restarted agent');
    assert.equal(resumed.body.instances?.full, true);
    assert.equal(resumed.hostId, first.hostId);
    assert.equal(server.joins.length, joins);
    assert.deepEqual((await again.stop('SIGTERM')).code, 0);
  },
);

test("a revoked host's agent exits with status 3, saying so", { skip }, async () => {
  const dataDir = join(root, 'revoked');
  const before = server.reports.length;
  const agent = start(agentArgs(dataDir, ['--server', server.url, '--token', server.token()]));
  const first = await server.report((_r, i) => i >= before, 'after the join');
  server.revoke(first.hostId);
  const exit = await agent.exited;
  assert.deepEqual(exit, { code: 3, signal: null }, agent.output());
  assert.match(
    agent.stderr(),
    new RegExp(
      `gantry: this host \\(${first.hostId}\\) was revoked on the control plane: its containers keep running; to join again, remove .*credential\\.json`,
    ),
  );
});

test(
  'a join token that is not valid exits with status 2 and says to create a new one; nothing is stored',
  { skip },
  async () => {
    const dataDir = join(root, 'bad-token');
    const token = 'gjt_0000000000000000000000000000dead';
    const agent = start(agentArgs(dataDir, ['--server', server.url, '--token', token]));
    const exit = await agent.exited;
    assert.deepEqual(exit, { code: 2, signal: null }, agent.output());
    assert.equal(agent.stderr().trim().split('\n').at(-1), `gantry: ${JOIN_TOKEN_INVALID_MESSAGE}`);
    assert.ok(!agent.output().includes(token));
    assert.equal(existsSync(join(dataDir, 'credential.json')), false);
  },
);

test('bad flags, or neither a token nor a credential, exit with status 2 naming what is wrong, the token never echoed', () => {
  const dir = join(root, 'flags');
  const cases: Array<[string[], RegExp]> = [
    [['--data-dir', dir], /gantry agent needs --server URL/],
    [['--server', 'ftp://cp.example', '--data-dir', dir], /--server "ftp:\/\/cp.example" must be an http/],
    [['--server', 'https://user:pw@cp.example', '--data-dir', dir], /must not carry a user or password/],
    [
      ['--server', 'https://cp.example', '--data-dir', dir, '--port-range', '80-90'],
      /--port-range "80-90" must be FIRST-LAST within 1024-65535/,
    ],
    [
      ['--server', 'https://cp.example', '--data-dir', dir, '--public-ip', 'gpu.example'],
      /--public-ip "gpu.example" must be an IP address/,
    ],
    [
      ['--server', 'https://cp.example', '--data-dir', dir, '--gpu-mode', 'cuda'],
      /--gpu-mode must be auto, nvidia or env-only/,
    ],
    [
      ['--server', 'https://cp.example', '--data-dir', dir, '--registries-allow', 'registry.internal:5000,no such'],
      /--registries-allow: "no such" is not a registry/,
    ],
    [
      ['--server', 'https://cp.example', '--data-dir', dir, '--token', 'secret-looking-value'],
      /--token is not a join token/,
    ],
    [
      ['--server', 'https://cp.example', '--data-dir', dir],
      /no host credential in .*credential\.json and no join token/,
    ],
  ];
  for (const [args, message] of cases) {
    const r = runGantry(['agent', ...args], {
      GANTRY_AGENT_TOKEN: '',
      GANTRY_AGENT_SERVER: '',
      GANTRY_AGENT_DATA_DIR: '',
      DOCKER_HOST: 'unix:///nonexistent.sock',
    });
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
    assert.ok(!r.stderr.includes('secret-looking-value'));
  }
});

test('gantry help lists the agent command', () => {
  const r = runGantry(['help']);
  assert.equal(r.status, 0);
  assert.match(r.stdout, /gantry agent --server URL\[,URL…\]/);
});
