/**
 * Two accounts' pods and workers on a real engine with iptables on (netns-engine.ts), for the
 * isolation suites: a Gantry server (the CLI, or a fixture with defences taken away) runs inside
 * the engine's namespace, as it does on a single host; each account gets pods of the netprobe
 * image and an endpoint whose one worker runs the netprobe worker image. What a test needs of
 * each instance: its container, its address on its network, its key (workers).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DockerClient } from '../../src/runtime/docker/docker-client.js';
import { eventually } from './eventually.js';
import type { NetnsEngine } from './netns-engine.js';
import { BANNER_12_4, standInNvidiaSmi } from './nvidia-smi.js';
import { runGantry, spawnGantry, type SpawnedGantry } from './spawn-gantry.js';

const GPU = 'NVIDIA GeForce RTX 4090';
const EIGHT_4090 = [0, 1, 2, 3, 4, 5, 6, 7]
  .map((i) => `${i}, GPU-7a2c2a57-3b1e-4c3d-9a41-0c3a5e1f7b0${i}, NVIDIA GeForce RTX 4090, 24564`)
  .join('\n');

/** A container as the attacks see it. */
export interface Placed {
  /** the pod's or worker's id */
  id: string;
  container: string;
  /** its address on the network it is on */
  ip: string;
  /** that network's gateway (the bridge's address on the host) */
  gateway: string;
  /** the engine network's name */
  network: string;
}

export interface Account {
  key: string;
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
}

export interface GantryInEngine {
  server: SpawnedGantry;
  /** the main API, as the test reaches it */
  url: string;
  mainPort: number;
  jobPort: number;
  accountA: Account;
  accountB: Account;
  namespace: string;
  stop(): Promise<void>;
}

const MAIN_PORT = 18080;
const JOB_PORT = 18081;

/**
 * Starts Gantry inside the engine's namespace, listening on every address there (the test reaches
 * it at the engine's address), the job API on a listener of its own, and two accounts.
 * `defencesOff`: run the fixture server without those defences (`networks`, `hardening`).
 */
export async function startGantryInEngine(
  engine: NetnsEngine,
  options: { defencesOff?: string[]; firewall?: boolean } = {},
): Promise<GantryInEngine> {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-isolation-'));
  const namespace = `iso${process.pid.toString(36)}${Math.random().toString(36).slice(2, 7)}`;
  const nvidiaSmi = standInNvidiaSmi({ csv: EIGHT_4090, banner: BANNER_12_4 });
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      runtime: {
        kind: 'docker',
        docker: {
          namespace,
          publicIp: engine.engineAddress,
          portRange: [30000, 30999],
          nvidiaSmi: nvidiaSmi.path,
          gpuMode: 'env-only',
          dataCenterId: 'US-TX-3',
          // disk is only reserved here (the storage driver enforces none): room for every instance
          diskGb: 2_000,
          firewall: { mode: options.firewall === false ? 'off' : 'install' },
        },
      },
      pods: { stopGraceMs: 1_000 },
      // Workers call often: an attacker's sniffer has requests to see within seconds.
      jobs: { timekeeperIntervalMs: 200, pingIntervalMs: 1_000, takeWaitMs: 1_000 },
      serverless: { autoscaler: { intervalMs: 200 } },
    }),
  );
  const keyA = `gty_isolation_a_${namespace}_0123456789`;
  const env = {
    DOCKER_HOST: engine.dockerHost,
    GANTRY_DATA_DIR: dir,
    GANTRY_CONFIG: config,
    GANTRY_BOOTSTRAP_KEY: keyA,
    GANTRY_HOST: '0.0.0.0',
    PORT: String(MAIN_PORT),
    GANTRY_JOB_PORT: String(JOB_PORT),
    GANTRY_PUBLIC_URL: `http://${engine.engineAddress}:${MAIN_PORT}`,
    GANTRY_PUBLIC_JOB_URL: `http://${engine.engineAddress}:${JOB_PORT}`,
    GANTRY_LOG_LEVEL: 'warn',
  };
  const server = await spawnGantry(['--port', String(MAIN_PORT)], env, 60_000, {
    prefix: engine.nsenter,
    ...(options.defencesOff
      ? {
          command: [
            '--import',
            'tsx',
            join(import.meta.dirname, '..', 'fixtures', 'docker-isolation-server.ts'),
            options.defencesOff.join(','),
          ],
        }
      : {}),
  });
  const url = `http://${engine.engineAddress}:${MAIN_PORT}`;
  const made = runGantry(['accounts', 'create', 'team-b'], env);
  assert.equal(made.status, 0, made.stderr);
  const keyed = runGantry(['keys', 'create', '--account', 'team-b', '--scope', 'write'], env);
  assert.equal(keyed.status, 0, keyed.stderr);
  const keyB = /gty_\S+/.exec(keyed.stdout)?.[0];
  assert.ok(keyB, keyed.stdout);
  const account = (key: string): Account => ({
    key,
    call: async (method, path, body) => {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    },
  });
  return {
    server,
    url,
    mainPort: MAIN_PORT,
    jobPort: JOB_PORT,
    accountA: account(keyA),
    accountB: account(keyB),
    namespace,
    stop: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Where the instance `id` of `namespace` runs, once its container runs. */
async function placed(
  client: DockerClient,
  namespace: string,
  id: string,
  output: () => string,
): Promise<Placed> {
  return eventually(
    () => `the container of ${id} to run\n${output().slice(-2_000)}`,
    async () => {
      const [c] = await client.listContainers({
        filters: { label: [`gantry.namespace=${namespace}`, `gantry.instance=${id}`], status: ['running'] },
      });
      if (!c) return null;
      const info = await client.inspectContainer(c.Id);
      const networks = Object.entries(
        (info as unknown as { NetworkSettings: { Networks: Record<string, { IPAddress: string; Gateway: string }> } })
          .NetworkSettings.Networks,
      );
      const [network, settings] = networks[0] ?? [];
      if (!network || !settings?.IPAddress) return null;
      return { id, container: c.Id, ip: settings.IPAddress, gateway: settings.Gateway, network };
    },
    120_000,
  );
}

/** A running pod of `image` for `account`. */
export async function podOf(g: GantryInEngine, account: Account, image: string, client: DockerClient): Promise<Placed> {
  const res = await account.call('POST', '/v2/pods', { name: 'isolation', image, gpu: { id: GPU, count: 1 } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return placed(client, g.namespace, res.body.id as string, () => g.server.output());
}

/** An endpoint of `account` with one worker of `image` kept running, and that worker. */
export async function workerOf(
  g: GantryInEngine,
  account: Account,
  image: string,
  client: DockerClient,
): Promise<Placed & { endpointId: string; key: string }> {
  const tpl = await account.call('POST', '/v2/templates', {
    name: `iso-${Math.random().toString(36).slice(2)}`,
    image,
    serverless: true,
  });
  assert.equal(tpl.status, 201, JSON.stringify(tpl.body));
  const ep = await account.call('POST', '/v2/serverless', {
    name: 'isolation',
    templateId: tpl.body.id,
    type: 'QUEUE',
    gpu: { pools: ['ADA_24'] },
    scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
    workers: { min: 1, max: 1, idleTimeout: 600 },
  });
  assert.equal(ep.status, 201, JSON.stringify(ep.body));
  const endpointId = ep.body.id as string;
  const worker = await eventually(
    () => `a worker of endpoint ${endpointId}\n${g.server.output().slice(-2_000)}`,
    async () => {
      const [c] = await client.listContainers({
        filters: { label: [`gantry.namespace=${g.namespace}`, `gantry.endpoint=${endpointId}`], status: ['running'] },
      });
      return c?.Labels?.['gantry.instance'] ?? null;
    },
    120_000,
  );
  const where = await placed(client, g.namespace, worker, () => g.server.output());
  const info = await client.inspectContainer(where.container);
  const key = (info?.Config.Env ?? [])
    .find((e) => e.startsWith('RUNPOD_AI_API_KEY='))
    ?.slice('RUNPOD_AI_API_KEY='.length);
  assert.ok(key, 'the worker has its key');
  return { ...where, endpointId, key };
}
