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
  /** Where its instances run, on the engine `client` drives. */
  where(client: DockerClient): Where;
  stop(): Promise<void>;
}

/** An engine and the namespace an installation labels its containers with there. */
export interface Where {
  client: DockerClient;
  namespace: string;
  /** the server's output so far, for failure messages */
  output(): string;
}

/**
 * The admin account (its key `keyA`) and a second one, `team-b`, made with the CLI over the
 * server's data (`env` names it as the server was given it), each with a write key.
 */
export function twoAccounts(
  url: string,
  keyA: string,
  env: Record<string, string>,
): { accountA: Account; accountB: Account } {
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
  return { accountA: account(keyA), accountB: account(keyB) };
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
  const { accountA, accountB } = twoAccounts(url, keyA, env);
  return {
    server,
    url,
    mainPort: MAIN_PORT,
    jobPort: JOB_PORT,
    accountA,
    accountB,
    namespace,
    where: (client) => ({ client, namespace, output: () => server.output() }),
    stop: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Where the instance `id` runs, once its container runs. */
async function placed(where: Where, id: string): Promise<Placed> {
  return eventually(
    () => `the container of ${id} to run\n${where.output().slice(-2_000)}`,
    async () => {
      const [c] = await where.client.listContainers({
        filters: { label: [`gantry.namespace=${where.namespace}`, `gantry.instance=${id}`], status: ['running'] },
      });
      if (!c) return null;
      const info = await where.client.inspectContainer(c.Id);
      const [network, settings] = Object.entries(info?.NetworkSettings?.Networks ?? {})[0] ?? [];
      if (!network || !settings?.IPAddress || !settings.Gateway) return null;
      return { id, container: c.Id, ip: settings.IPAddress, gateway: settings.Gateway, network };
    },
    120_000,
  );
}

/** A running pod of `image` for `account`, on a GPU of type `gpu`, with `ports` (`8000/http`) when given. */
export async function podOf(
  account: Account,
  image: string,
  where: Where,
  gpu = GPU,
  ports?: string[],
): Promise<Placed> {
  const res = await account.call('POST', '/v2/pods', {
    name: 'isolation',
    image,
    gpu: { id: gpu, count: 1 },
    disk: 5,
    ...(ports ? { ports } : {}),
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return placed(where, res.body.id as string);
}

/** An endpoint of `account` with one worker of `image` kept running (on the GPU pool `pool`), and that worker. */
export async function workerOf(
  account: Account,
  image: string,
  where: Where,
  pool = 'ADA_24',
): Promise<Placed & { endpointId: string; key: string }> {
  const tpl = await account.call('POST', '/v2/templates', {
    name: `iso-${Math.random().toString(36).slice(2)}`,
    image,
    serverless: true,
    containerDiskInGb: 5,
  });
  assert.equal(tpl.status, 201, JSON.stringify(tpl.body));
  const ep = await account.call('POST', '/v2/serverless', {
    name: 'isolation',
    templateId: tpl.body.id,
    type: 'QUEUE',
    gpu: { pools: [pool] },
    scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
    workers: { min: 1, max: 1, idleTimeout: 600 },
  });
  assert.equal(ep.status, 201, JSON.stringify(ep.body));
  const endpointId = ep.body.id as string;
  const worker = await eventually(
    () => `a worker of endpoint ${endpointId}\n${where.output().slice(-2_000)}`,
    async () => {
      const [c] = await where.client.listContainers({
        filters: {
          label: [`gantry.namespace=${where.namespace}`, `gantry.endpoint=${endpointId}`],
          status: ['running'],
        },
      });
      return c?.Labels?.['gantry.instance'] ?? null;
    },
    120_000,
  );
  const at = await placed(where, worker);
  const info = await where.client.inspectContainer(at.container);
  const key = (info?.Config.Env ?? [])
    .find((e) => e.startsWith('RUNPOD_AI_API_KEY='))
    ?.slice('RUNPOD_AI_API_KEY='.length);
  assert.ok(key, 'the worker has its key');
  return { ...at, endpointId, key };
}
