/**
 * A FlashBoot world on the fleet, for the e2e tests of issue 30: the compiled control plane
 * (`gantry serve` with `runtime: fleet`, spawned, so it can be killed with SIGKILL and started
 * again on the same data dir and port), real `gantry agent` processes each over a Docker engine
 * (the shared one, or a test daemon of a host's own) in a namespace of its own, the echo worker
 * image (flashboot-docker.ts's) on every engine, and a FlashBoot queue endpoint of at most one
 * worker with a 1 s idle timeout on one GPU. A host's GPUs come from a stand-in `nvidia-smi` (no
 * NVIDIA GPU here): one RTX 4090 each unless told otherwise. Helpers submit jobs and wait for
 * their end (answering the worker, its host and container), read the endpoint's health and the
 * hosts' states (`gantry hosts list`), and wait for the worker to be suspended.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DockerClient } from '../../src/runtime/docker/docker-client.js';
import { freePort } from '../../src/runtime/runtime-contract.js';
import { removeNamespace, uniqueNamespace } from './docker.js';
import { eventually, freePortRange } from './eventually.js';
import { buildEchoWorker, echoEndpoint, type Answered, type WorkerHealth } from './flashboot-docker.js';
import { BANNER_12_4, removeStandIns, standInNvidiaSmi } from './nvidia-smi.js';
import { runGantry, spawnGantry, type SpawnedGantry } from './spawn-gantry.js';
import { spawnAgent, type SpawnedAgent } from './spawn-agent.js';
import { bearerApi } from './bearer-api.js';

const KEY = 'flashboot-fleet-admin-key-0123456789';
export const RTX_4090 = 'NVIDIA GeForce RTX 4090';

/** An engine a host's agent runs its containers on. */
export interface HostEngine {
  client: DockerClient;
  dockerHost: string;
}

export interface FleetHost {
  name: string;
  namespace: string;
  engine: HostEngine;
  args: string[];
  agent: SpawnedAgent | null;
  /** its id, once joined */
  id: string;
}

interface Job {
  id: string;
  status: string;
  retries?: number;
  output?: { echoed: unknown; podId: string | null };
}
export interface EndpointHealth {
  workers: WorkerHealth & { initializing: number };
  jobs: { inQueue: number; inProgress: number; failed: number; completed: number };
}
/** A job's answer: the worker and container that answered it, the host it runs on, its retries. */
export interface FleetAnswered extends Answered {
  host: string;
  retries: number;
}

export class FlashbootFleetWorld {
  readonly #dir = mkdtempSync(join(tmpdir(), 'gantry-flashboot-fleet-'));
  readonly #dataDir = join(this.#dir, 'control-plane');
  readonly #configPath = join(this.#dir, 'config.json');
  readonly #args = ['--host', '127.0.0.1', '--data-dir', this.#dataDir, '--config', this.#configPath];
  readonly hosts = new Map<string, FleetHost>();
  /** The echo worker image, the same tag on every engine (its hash is of what went into it). */
  image = '';
  server: SpawnedGantry | null = null;
  endpointId = '';

  /**
   * Writes the config (`maxKeepMs` the FlashBoot keep time's maximum; `extra` top-level sections
   * added, e.g. `proxy`) and starts the control plane.
   */
  async start(maxKeepMs = 600_000, extra: Record<string, unknown> = {}): Promise<void> {
    writeFileSync(
      this.#configPath,
      JSON.stringify({
        ...extra,
        fleet: { heartbeatMs: 500, heartbeatTimeoutMs: 4_000, pollWaitMs: 5_000 },
        pods: { stopGraceMs: 1_000 },
        runtime: { kind: 'fleet' },
        jobs: { timekeeperIntervalMs: 200, pingIntervalMs: 1_000 },
        serverless: { autoscaler: { intervalMs: 200 }, flashboot: { maxKeepMs, prepull: { intervalMs: 0 } } },
      }),
    );
    this.#args.push('--port', String(await freePort()));
    await this.startServer();
  }

  startServer = async (): Promise<void> => {
    this.server = await spawnGantry(this.#args, { GANTRY_BOOTSTRAP_KEY: KEY });
  };

  /** A shorter (or longer) FlashBoot keep time, for the next control plane started. */
  setMaxKeepMs(maxKeepMs: number): void {
    const config = JSON.parse(readFileSync(this.#configPath, 'utf8')) as {
      serverless: { flashboot: { maxKeepMs: number } };
    };
    config.serverless.flashboot.maxKeepMs = maxKeepMs;
    writeFileSync(this.#configPath, JSON.stringify(config));
  }

  /**
   * Joins a host whose agent runs over `engine` with `gpus` RTX 4090s (a stand-in nvidia-smi), and
   * waits until `gantry hosts list` says it is available. Builds the worker image on its engine.
   */
  async addHost(name: string, engine: HostEngine, gpus = 1): Promise<FleetHost> {
    this.image = await buildEchoWorker(engine.client);
    const serial = randomBytes(4).toString('hex');
    const smi = standInNvidiaSmi({
      csv: Array.from(
        { length: gpus },
        (_, i) => `${i}, GPU-${serial}-0000-4000-8000-00000000000${i}, ${RTX_4090}, 24564`,
      ).join('\n'),
      banner: BANNER_12_4,
    });
    const ports = await freePortRange(10);
    const host: FleetHost = {
      name,
      namespace: uniqueNamespace(),
      engine,
      args: [],
      agent: null,
      id: '',
    };
    host.args = [
      '--server',
      this.server!.url,
      '--data-dir',
      join(this.#dir, name),
      '--name',
      name,
      '--namespace',
      host.namespace,
      '--public-ip',
      '127.0.0.1',
      '--port-range',
      `${ports[0]}-${ports[1]}`,
      '--docker-host',
      engine.dockerHost,
      '--nvidia-smi',
      smi.path,
      '--gpu-mode',
      'env-only',
    ];
    this.hosts.set(name, host);
    const token = runGantry(['hosts', 'token', 'create', '--data-dir', this.#dataDir]).stdout.trim();
    assert.match(token, /^gjt_/);
    const agent = this.startAgent(name, token);
    const joined = await eventually(
      () => `host ${name} to join: ${JSON.stringify(this.hostsList())}; its agent said:\n${agent.output()}`,
      async () => this.hostsList().find((h) => h.name === name && h.state === 'available') ?? null,
      60_000,
      500,
    );
    host.id = joined.id;
    return host;
  }

  /** Starts host `name`'s agent (joining with `token` the first time, with its stored credential after). */
  startAgent(name: string, token?: string): SpawnedAgent {
    const host = this.hosts.get(name)!;
    host.agent = spawnAgent([...host.args, ...(token ? ['--token', token] : [])], { GANTRY_LOG_LEVEL: 'warn' });
    return host.agent;
  }

  /** What `gantry hosts list` says (availability judged by the config's heartbeat timeout). */
  hostsList = (): Array<{ id: string; name: string; state: string }> =>
    JSON.parse(
      runGantry(['hosts', 'list', '--json', '--data-dir', this.#dataDir, '--config', this.#configPath]).stdout || '[]',
    ) as Array<{ id: string; name: string; state: string }>;

  /** A FlashBoot queue endpoint of at most one worker on one RTX 4090 (1 s idle timeout); answers its id. */
  async endpoint(name: string): Promise<string> {
    this.endpointId = await echoEndpoint(this.call, this.image, name, { idleTimeout: 1, flashboot: true });
    return this.endpointId;
  }

  async close(): Promise<void> {
    await Promise.all([...this.hosts.values()].flatMap((h) => (h.agent ? [h.agent.stop('SIGKILL')] : [])));
    await this.server?.stop();
    for (const h of this.hosts.values()) await removeNamespace(h.engine.client, h.namespace);
    removeStandIns();
    rmSync(this.#dir, { recursive: true, force: true });
  }

  call = bearerApi(() => this.server!.url, KEY);

  health = async (): Promise<EndpointHealth> =>
    (await this.call<EndpointHealth>('GET', `/v2/${this.endpointId}/health`)).body;

  /** The endpoint's worker containers on host `name`'s engine (in its agent's namespace). */
  containersOn = (name: string) => {
    const host = this.hosts.get(name)!;
    return host.engine.client.listContainers({
      all: true,
      filters: { label: [`gantry.namespace=${host.namespace}`, `gantry.endpoint=${this.endpointId}`] },
    });
  };

  /** Submits a job; answers its id. */
  submit = async (input: unknown): Promise<string> => {
    const sent = await this.call<Job>('POST', `/v2/${this.endpointId}/run`, { input });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    return sent.body.id;
  };

  /** Waits for job `id`'s end; answers the worker, its host and the container that answered. */
  finished = async (id: string, input: unknown): Promise<FleetAnswered> => {
    const done = await eventually(
      async () =>
        `job ${id} to finish; health ${JSON.stringify(await this.health())}\n${this.server!.output().slice(-2_000)}`,
      async () => {
        const s = (await this.call<Job>('GET', `/v2/${this.endpointId}/status/${id}`)).body;
        return s.status === 'COMPLETED' || s.status === 'FAILED' ? s : null;
      },
      120_000,
    );
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
    assert.deepEqual(done.output?.echoed, input);
    const workerId = done.output!.podId!;
    for (const host of this.hosts.values()) {
      const [container] = (await this.containersOn(host.name)).filter(
        (c) => c.Labels?.['gantry.instance'] === workerId,
      );
      if (!container) continue;
      const inspected = await host.engine.client.inspectContainer(container.Id);
      return {
        workerId,
        containerId: container.Id,
        startedAt: inspected!.State.StartedAt,
        host: host.name,
        retries: done.retries ?? 0,
      };
    }
    throw new Error(`no host holds worker ${workerId}'s container`);
  };

  /** Submits a job and waits for its end. */
  job = async (input: unknown): Promise<FleetAnswered> => this.finished(await this.submit(input), input);

  /** Waits until the endpoint's one worker is suspended. */
  suspended = () =>
    eventually(
      async () => `the idle worker to be suspended; health ${JSON.stringify(await this.health())}`,
      async () => {
        const { workers: w } = await this.health();
        return w.suspended === 1 && w.idle === 0 && w.running === 0 && w.initializing === 0;
      },
      60_000,
    );

  /** Whether container `id` on host `name` is paused (null when it is gone). */
  paused = async (name: string, id: string) =>
    (await this.hosts.get(name)!.engine.client.inspectContainer(id))?.State.Paused ?? null;
}
