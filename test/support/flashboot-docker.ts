/**
 * A FlashBoot world on a real Docker engine, for the e2e tests of issue 30: the compiled server
 * (`gantry serve`, spawned) on the engine `dockerHost`, an echo worker image (
 * test/fixtures/container-echo-worker.mjs over dist/worker), and a FlashBoot queue endpoint of at
 * most one worker with a 1 s idle timeout. The GPUs come from a stand-in `nvidia-smi` (no NVIDIA
 * GPU here). Helpers submit jobs and wait for their end, read the endpoint's health, and wait for
 * its worker to be suspended.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { DockerClient } from '../../src/runtime/docker/docker-client.js';
import { freePort } from '../../src/runtime/runtime-contract.js';
import { removeNamespace, uniqueNamespace } from './docker.js';
import { buildImage } from './docker-images.js';
import { eventually, freePortRange } from './eventually.js';
import { BANNER_12_4, removeStandIns, standInNvidiaSmi } from './nvidia-smi.js';
import { spawnGantry, type SpawnedGantry } from './spawn-gantry.js';
import { bearerApi, type ApiCall } from './bearer-api.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const KEY = 'flashboot-docker-admin-key-0123456789';
const TWO_4090 = [0, 1]
  .map((i) => `${i}, GPU-6f1c2a57-3b1e-4c3d-9a41-0c3a5e1f7b1${i}, NVIDIA GeForce RTX 4090, 24564`)
  .join('\n');

interface Job {
  id: string;
  status: string;
  output?: { echoed: unknown; podId: string | null };
}
export interface WorkerHealth {
  idle: number;
  running: number;
  suspended: number;
}
/** The worker that answered a job, its container and when that container started. */
export interface Answered {
  workerId: string;
  containerId: string;
  startedAt: string;
}

/**
 * The echo worker image on `client`'s engine: test/fixtures/container-echo-worker.mjs over the
 * compiled worker library (dist/worker); answers its tag.
 */
export function buildEchoWorker(client: DockerClient): Promise<string> {
  const workerDir = join(ROOT, 'dist', 'worker');
  return buildImage(client, {
    name: 'echo-worker',
    node: true,
    files: [
      { from: join(ROOT, 'test', 'fixtures', 'container-echo-worker.mjs'), to: '/app/handler.mjs' },
      ...readdirSync(workerDir)
        .filter((f) => f.endsWith('.js'))
        .map((f) => ({ from: join(workerDir, f), to: `/app/worker/${f}` })),
    ],
    changes: ['ENTRYPOINT ["/usr/local/bin/node", "/app/handler.mjs"]'],
  });
}

/** A queue endpoint (and its template) of at most one worker on `image`, one ADA_24 GPU; answers its id. */
export async function echoEndpoint(
  call: ApiCall,
  image: string,
  name: string,
  o: { idleTimeout: number; flashboot: boolean },
): Promise<string> {
  const tpl = await call<{ id: string }>('POST', '/v2/templates', {
    name: `${name}-${Date.now()}`,
    image,
    serverless: true,
  });
  assert.equal(tpl.status, 201, JSON.stringify(tpl.body));
  const ep = await call<{ id: string }>('POST', '/v2/serverless', {
    name,
    templateId: tpl.body.id,
    type: 'QUEUE',
    gpu: { pools: ['ADA_24'] },
    scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
    workers: { min: 0, max: 1, idleTimeout: o.idleTimeout },
    ...(o.flashboot ? { flashboot: 'FLASHBOOT' } : {}),
  });
  assert.equal(ep.status, 201, JSON.stringify(ep.body));
  return ep.body.id;
}

export class FlashbootDockerWorld {
  readonly namespace = uniqueNamespace();
  readonly #dir = mkdtempSync(join(tmpdir(), 'gantry-flashboot-docker-'));
  readonly #args = ['--data-dir', this.#dir, '--config', join(this.#dir, 'config.yaml')];
  server: SpawnedGantry | null = null;
  /** The endpoint the helpers use (a test may point it at another of its own). */
  endpointId = '';
  image = '';

  constructor(
    readonly client: DockerClient,
    readonly dockerHost: string,
  ) {}

  /** Writes the config, starts the server, builds the image and makes the FlashBoot endpoint. */
  async start(): Promise<void> {
    const nvidiaSmi = standInNvidiaSmi({ csv: TWO_4090, banner: BANNER_12_4 });
    this.#writeConfig(600_000, await freePortRange(20), nvidiaSmi.path);
    this.#args.push('--port', String(await freePort()));
    await this.startServer();
    this.image = await buildEchoWorker(this.client);
    this.endpointId = await this.endpoint('flashboot-docker', { idleTimeout: 1, flashboot: true });
  }

  /** A new queue endpoint of at most one worker on the echo image; answers its id. */
  endpoint(name: string, o: { idleTimeout: number; flashboot: boolean }): Promise<string> {
    return echoEndpoint(this.call, this.image, name, o);
  }

  startServer = async (): Promise<void> => {
    this.server = await spawnGantry(this.#args, { DOCKER_HOST: this.dockerHost, GANTRY_BOOTSTRAP_KEY: KEY });
  };

  /** A shorter (or longer) FlashBoot keep time, for the next server started. */
  setMaxKeepMs(maxKeepMs: number): void {
    const path = join(this.#dir, 'config.yaml');
    const config = JSON.parse(readFileSync(path, 'utf8')) as { serverless: { flashboot: { maxKeepMs: number } } };
    config.serverless.flashboot.maxKeepMs = maxKeepMs;
    writeFileSync(path, JSON.stringify(config));
  }

  #writeConfig(maxKeepMs: number, portRange: [number, number], nvidiaSmi: string): void {
    writeFileSync(
      join(this.#dir, 'config.yaml'),
      JSON.stringify({
        runtime: {
          kind: 'docker',
          docker: {
            namespace: this.namespace,
            bindIp: '127.0.0.1',
            publicIp: '127.0.0.1',
            portRange,
            nvidiaSmi,
            gpuMode: 'env-only',
            // the engine shares this machine's network namespace: its firewall stays untouched
            firewall: { mode: 'off' },
          },
        },
        pods: { stopGraceMs: 2_000 },
        jobs: { timekeeperIntervalMs: 200, pingIntervalMs: 1_000 },
        serverless: { autoscaler: { intervalMs: 200 }, flashboot: { maxKeepMs } },
      }),
    );
  }

  async close(): Promise<void> {
    await this.server?.stop();
    await removeNamespace(this.client, this.namespace);
    removeStandIns();
    rmSync(this.#dir, { recursive: true, force: true });
  }

  call = bearerApi(() => this.server!.url, KEY);

  health = async (): Promise<WorkerHealth> =>
    (await this.call<{ workers: WorkerHealth }>('GET', `/v2/${this.endpointId}/health`)).body.workers;

  workerContainers = () =>
    this.client.listContainers({
      all: true,
      filters: { label: [`gantry.namespace=${this.namespace}`, `gantry.endpoint=${this.endpointId}`] },
    });

  /** Submits a job and waits for its end; answers the worker and the container that answered. */
  job = async (input: unknown): Promise<Answered> => {
    const sent = await this.call<Job>('POST', `/v2/${this.endpointId}/run`, { input });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const done = await eventually(
      async () =>
        `job ${sent.body.id} to finish; health ${JSON.stringify(await this.health())}\n${this.server!.output().slice(-2_000)}`,
      async () => {
        const s = (await this.call<Job>('GET', `/v2/${this.endpointId}/status/${sent.body.id}`)).body;
        return s.status === 'COMPLETED' || s.status === 'FAILED' ? s : null;
      },
      60_000,
    );
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
    assert.deepEqual(done.output?.echoed, input);
    const containers = (await this.workerContainers()).filter(
      (c) => c.Labels?.['gantry.instance'] === done.output?.podId,
    );
    assert.equal(containers.length, 1, `one container of worker ${done.output?.podId}`);
    const inspected = await this.client.inspectContainer(containers[0]!.Id);
    return { workerId: done.output!.podId!, containerId: containers[0]!.Id, startedAt: inspected!.State.StartedAt };
  };

  /** Waits until the endpoint's one worker is suspended. */
  suspended = () =>
    eventually(
      async () => `the idle worker to be suspended; health ${JSON.stringify(await this.health())}`,
      async () => {
        const h = await this.health();
        return h.suspended === 1 && h.idle === 0 && h.running === 0;
      },
      60_000,
    );

  paused = async (containerId: string) => (await this.client.inspectContainer(containerId))?.State.Paused;
}
