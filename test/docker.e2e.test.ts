/**
 * Gantry on the Docker runtime, end to end over HTTP: the compiled CLI (`gantry serve`, spawned)
 * with `runtime: docker` on a real engine, pods and serverless workers as real containers, driven
 * through the REST API and the npm `runpod-sdk`. The server reaches the engine through a unix
 * socket proxy (test/support/socket-proxy.ts) so a test can take the engine away and bring it back.
 * The host's GPUs come from a stand-in `nvidia-smi` (the one seam with no real thing on a machine
 * without NVIDIA GPUs; gpuMode env-only). Everything is made in a namespace of this run's own and
 * removed at the end. Skipped, saying why, when no engine answers.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import runpodSdk from 'runpod-sdk';
import { namespaceFilter } from '../src/runtime/docker/docker-names.js';
import { freePort } from '../src/runtime/runtime-contract.js';
import {
  DOCKER_HOST,
  dockerEngine,
  instanceHttp,
  instanceInfo,
  noEngine,
  removeNamespace,
  uniqueNamespace,
} from './support/docker.js';
import { buildImage } from './support/docker-images.js';
import { eventually, freePortRange } from './support/eventually.js';
import { BANNER_12_4, removeStandIns, standInNvidiaSmi } from './support/nvidia-smi.js';
import { UnixSocketProxy } from './support/socket-proxy.js';
import { spawnGantry, type SpawnedGantry } from './support/spawn-gantry.js';
import { readSse } from './support/sse-client.js';

const ROOT = resolve(import.meta.dirname, '..');
const KEY = 'docker-e2e-admin-key-0123456789';
const GPU = 'NVIDIA GeForce RTX 4090';
const FOUR_4090 = [0, 1, 2, 3]
  .map((i) => `${i}, GPU-6f1c2a57-3b1e-4c3d-9a41-0c3a5e1f7b0${i}, NVIDIA GeForce RTX 4090, 24564`)
  .join('\n');

const engine = await dockerEngine();
after(() => engine?.client.close());

interface Pod {
  id: string;
  status: string;
  statusReason: string | null;
  env: Record<string, string>;
  runtime: { ports?: Array<{ private: number; public: number; type: string; ip: string | null }> } | null;
}

if (!engine) {
  test('Gantry on the Docker runtime over HTTP', { skip: noEngine() }, () => {});
} else if (!DOCKER_HOST.startsWith('unix://')) {
  test(
    'Gantry on the Docker runtime over HTTP',
    {
      skip: `these tests put a unix socket proxy in front of the engine; DOCKER_HOST ${DOCKER_HOST} is not a unix socket`,
    },
    () => {},
  );
} else {
  const e = engine;
  const namespace = uniqueNamespace();
  const proxy = new UnixSocketProxy(DOCKER_HOST.slice('unix://'.length));
  const dir = mkdtempSync(join(tmpdir(), 'gantry-docker-e2e-'));
  // A fixed port, not 0: with `--port 0` the job URL workers get says port 0 (see the report).
  const args = ['--data-dir', dir, '--config', join(dir, 'config.yaml')];
  let server: SpawnedGantry | null = null;

  const call = async (
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; type: string; body: any }> => {
    const res = await fetch(`${server!.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${KEY}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, type: res.headers.get('content-type') ?? '', body: text ? JSON.parse(text) : null };
  };
  const getPod = async (id: string): Promise<Pod> => {
    const res = await call('GET', `/v2/pods/${id}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body as Pod;
  };
  const podUntil = (id: string, what: string, done: (p: Pod) => boolean, ms = 60_000): Promise<Pod> => {
    let last: Pod | null = null;
    return eventually(
      () =>
        `pod ${id} ${what}; last: ${JSON.stringify(last && { status: last.status, statusReason: last.statusReason })}\n${server!.output().slice(-2_000)}`,
      async () => {
        last = await getPod(id);
        return done(last) ? last : null;
      },
      ms,
    );
  };
  const createPod = async (body: Record<string, unknown>): Promise<Pod> => {
    const res = await call('POST', '/v2/pods', { name: 'e2e', gpu: { id: GPU, count: 1 }, ...body });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body as Pod;
  };
  const action = async (id: string, name: 'start' | 'stop' | 'terminate'): Promise<void> => {
    const res = await call('POST', `/v2/pods/${id}/action`, { action: name });
    assert.ok(res.status === 200 || res.status === 204, `${name}: ${res.status} ${JSON.stringify(res.body)}`);
  };
  const publicPort = (pod: Pod, privatePort: number): number => {
    const port = pod.runtime?.ports?.find((p) => p.private === privatePort);
    assert.ok(port, `pod ${pod.id} publishes ${privatePort}: ${JSON.stringify(pod.runtime)}`);
    return port.public;
  };
  /** The pod's containers (running or not), by the labels Gantry puts on them. */
  const containersOf = (podId: string) =>
    e.client.listContainers({
      all: true,
      filters: { label: [`gantry.namespace=${namespace}`, `gantry.instance=${podId}`] },
    });

  describe('Gantry on the Docker runtime over HTTP', () => {
    before(async () => {
      await proxy.start();
      const nvidiaSmi = standInNvidiaSmi({ csv: FOUR_4090, banner: BANNER_12_4 });
      const portRange = await freePortRange(50);
      const http = { health: { type: 'http', port: 8000, path: '/health', intervalMs: 50, timeoutMs: 30_000 } };
      writeFileSync(
        join(dir, 'config.yaml'),
        JSON.stringify({
          // JSON is YAML
          runtime: {
            kind: 'docker',
            docker: {
              namespace,
              bindIp: '127.0.0.1',
              publicIp: '127.0.0.1',
              portRange,
              nvidiaSmi: nvidiaSmi.path,
              gpuMode: 'env-only',
              dataCenterId: 'US-TX-3',
              // it serves CPU pods and CPU endpoints' workers beside its GPUs
              cpuFlavors: ['cpu3c'],
              // The engine shares this machine's network namespace: its firewall stays untouched
              // (tenant-matrix-container-network.test.ts installs it around an engine of its own).
              firewall: { mode: 'off' },
            },
          },
          images: { [e.images.http]: http },
          pods: { stopGraceMs: 2_000 },
          jobs: { timekeeperIntervalMs: 200, pingIntervalMs: 1_000 },
          serverless: { autoscaler: { intervalMs: 200 } },
        }),
      );
      args.push('--port', String(await freePort()));
      server = await spawnGantry(args, serverEnv());
    });
    after(async () => {
      await server?.stop();
      await proxy.close();
      await removeNamespace(e.client, namespace);
      removeStandIns();
      rmSync(dir, { recursive: true, force: true });
    });
    const serverEnv = () => ({
      DOCKER_HOST: `unix://${proxy.path}`,
      GANTRY_BOOTSTRAP_KEY: KEY,
      GANTRY_LOG_LEVEL: 'warn',
    });

    test('a pod of an image with port 8000/http becomes RUNNING, answers on its published port, and its container sees RUNPOD_POD_ID and the pod env', async () => {
      const created = await createPod({
        image: e.images.http,
        ports: ['8000/http'],
        env: { GREETING: 'hello from e2e' },
      });
      const pod = await podUntil(created.id, 'to be RUNNING', (p) => p.status === 'RUNNING');
      const port = publicPort(pod, 8000);
      assert.equal(pod.runtime?.ports?.[0]?.ip, '127.0.0.1');
      const info = await instanceInfo(port);
      assert.equal(info.env.RUNPOD_POD_ID, pod.id);
      assert.equal(info.env.GREETING, 'hello from e2e');
      assert.equal(info.env.RUNPOD_PUBLIC_IP, '127.0.0.1');
      const [container] = await containersOf(pod.id);
      assert.equal(container?.State, 'running');
      await action(pod.id, 'terminate');
    });

    test("a file under the pod's persistent mount survives stop and start; terminate removes the container and the pod's volume", async () => {
      const created = await createPod({
        image: e.images.http,
        ports: ['8000/http'],
        mounts: { persistent: { size: 10, path: '/workspace' } },
      });
      let pod = await podUntil(created.id, 'to be RUNNING', (p) => p.status === 'RUNNING');
      const before = await instanceInfo(publicPort(pod, 8000));
      assert.equal(
        (await instanceHttp(publicPort(pod, 8000), 'PUT', '/file?path=/workspace/kept.txt', 'kept across stop')).status,
        204,
      );
      assert.equal(
        (await instanceHttp(publicPort(pod, 8000), 'PUT', '/file?path=/root/scratch.txt', 'container disk')).status,
        204,
      );

      await action(pod.id, 'stop');
      await podUntil(pod.id, 'to be EXITED', (p) => p.status === 'EXITED');
      await action(pod.id, 'start');
      pod = await podUntil(pod.id, 'to be RUNNING again', (p) => p.status === 'RUNNING');
      const port = publicPort(pod, 8000);
      assert.notEqual((await instanceInfo(port)).bootId, before.bootId, 'a start runs the container afresh');
      assert.deepEqual(await instanceHttp(port, 'GET', '/file?path=/workspace/kept.txt'), {
        status: 200,
        text: 'kept across stop',
      });
      assert.equal(
        (await instanceHttp(port, 'GET', '/file?path=/root/scratch.txt')).status,
        404,
        'the container disk is ephemeral',
      );

      const volumes = (await e.client.listVolumes(namespaceFilter(namespace))).filter(
        (v) => v.Name === `gantry-${namespace}-pod-${pod.id}`,
      );
      assert.equal(volumes.length, 1, 'the pod has its volume');
      await action(pod.id, 'terminate');
      await eventually('the container and volume to be removed', async () => {
        const left = await containersOf(pod.id);
        const vols = (await e.client.listVolumes(namespaceFilter(namespace))).filter(
          (v) => v.Name === `gantry-${namespace}-pod-${pod.id}`,
        );
        return left.length === 0 && vols.length === 0;
      });
      assert.equal((await getPod(pod.id)).status, 'TERMINATED');
    });

    test("kill -9 of gantry leaves the pod's container running; a gantry restarted on the same data dir adopts it without restarting it", async () => {
      const created = await createPod({ image: e.images.http, ports: ['8000/http'] });
      const pod = await podUntil(created.id, 'to be RUNNING', (p) => p.status === 'RUNNING');
      const port = publicPort(pod, 8000);
      const { bootId } = await instanceInfo(port);

      await server!.stop('SIGKILL');
      assert.equal((await instanceInfo(port)).bootId, bootId, 'the container outlives the server');
      server = await spawnGantry(args, serverEnv());
      const began = Date.now();
      const adopted = await podUntil(pod.id, 'to be RUNNING after the restart', (p) => p.status === 'RUNNING', 10_000);
      assert.ok(Date.now() - began < 10_000);
      assert.equal(adopted.statusReason, null);
      assert.equal(publicPort(adopted, 8000), port);
      assert.equal((await instanceInfo(port)).bootId, bootId, 'adopted, not restarted');
      const containers = await containersOf(pod.id);
      assert.equal(containers.length, 1);
      assert.equal(containers[0]!.State, 'running');
      await action(pod.id, 'terminate');
    });

    /** The echo worker's image (test/fixtures/container-echo-worker.mjs over dist/worker). */
    const echoWorkerImage = () => {
      const workerDir = join(ROOT, 'dist', 'worker');
      return buildImage(e.client, {
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
    };
    test("the npm runpod-sdk's runSync is answered by a worker container the autoscaler launched on the host network", async () => {
      const image = await echoWorkerImage();
      const tpl = await call('POST', '/v2/templates', {
        name: `docker-echo-${Date.now()}`,
        image,
        serverless: true,
      });
      assert.equal(tpl.status, 201, JSON.stringify(tpl.body));
      const ep = await call('POST', '/v2/serverless', {
        name: 'docker-echo',
        templateId: tpl.body.id,
        type: 'QUEUE',
        gpu: { pools: ['ADA_24'] },
        scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
        workers: { min: 0, max: 1, idleTimeout: 600 },
      });
      assert.equal(ep.status, 201, JSON.stringify(ep.body));

      const endpoint = runpodSdk(KEY, { baseUrl: `${server!.url}/v2` }).endpoint(ep.body.id as string)!;
      const res = (await endpoint.runSync({ input: { hello: 'container' } }, 30_000)) as unknown as {
        status: string;
        output?: { echoed: unknown; podId: string | null };
      };
      const workerLogs = async (): Promise<string> => {
        const all = await e.client.listContainers({
          all: true,
          filters: { label: [`gantry.namespace=${namespace}`, 'gantry.kind=worker'] },
        });
        const logs = await Promise.all(
          all.map(
            async (c) => `${c.Names[0]} ${c.State} ${c.Status}:\n${await e.client.containerLogs(c.Id, { tail: 20 })}`,
          ),
        );
        return `${logs.join('\n') || 'no worker containers'}\n${server!.output().slice(-3_000)}`;
      };
      const done =
        res.status === 'COMPLETED'
          ? res
          : await eventually(
              async () => `job ${JSON.stringify(res)} to finish; workers: ${await workerLogs()}`,
              async () => {
                const s = (await endpoint.status((res as unknown as { id: string }).id)) as unknown as typeof res;
                return s.status === 'COMPLETED' || s.status === 'FAILED' ? s : null;
              },
              30_000,
            );
      assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
      assert.deepEqual(done.output?.echoed, { hello: 'container' });
      const workers = await e.client.listContainers({
        filters: { label: [`gantry.namespace=${namespace}`, 'gantry.kind=worker', `gantry.endpoint=${ep.body.id}`] },
      });
      assert.equal(workers.length, 1, 'one worker container');
      const worker = await e.client.inspectContainer(workers[0]!.Id);
      assert.equal(worker?.HostConfig.NetworkMode, 'host');
      assert.equal(done.output?.podId, worker?.Config?.Labels?.['gantry.instance']);
    });

    test('a CPU endpoint (REST v2 `cpu`) is answered by a worker container with the instance’s vCPUs as its CPU limit and RUNPOD_CPU_COUNT, and no GPU', async () => {
      const tpl = await call('POST', '/v2/templates', {
        name: `docker-cpu-echo-${Date.now()}`,
        image: await echoWorkerImage(),
        serverless: true,
      });
      assert.equal(tpl.status, 201, JSON.stringify(tpl.body));
      const ep = await call('POST', '/v2/serverless', {
        name: 'docker-cpu-echo',
        templateId: tpl.body.id,
        type: 'QUEUE',
        cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
        scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
        workers: { min: 0, max: 1, idleTimeout: 600 },
      });
      assert.equal(ep.status, 201, JSON.stringify(ep.body));
      const run = await call('POST', `/v2/${ep.body.id}/runsync?wait=30000`, { input: { on: 'cpu' } });
      assert.equal(run.status, 200, `${JSON.stringify(run.body)}\n${server!.output().slice(-2_000)}`);
      assert.equal(run.body.status, 'COMPLETED', JSON.stringify(run.body));
      assert.deepEqual(run.body.output?.echoed, { on: 'cpu' });
      const [container] = await e.client.listContainers({
        filters: { label: [`gantry.namespace=${namespace}`, 'gantry.kind=worker', `gantry.endpoint=${ep.body.id}`] },
      });
      assert.ok(container, 'a worker container');
      const worker = await e.client.inspectContainer(container.Id);
      const env = worker?.Config?.Env ?? [];
      assert.ok(env.includes('RUNPOD_CPU_COUNT=2'), env.join(' '));
      assert.ok(env.includes('RUNPOD_GPU_COUNT=0'), env.join(' '));
      assert.ok(env.includes('NVIDIA_VISIBLE_DEVICES=none'), 'no GPU reaches it');
      const host = worker?.HostConfig;
      assert.ok(host?.NanoCpus && host.NanoCpus <= 2e9, `CPU limit ${host?.NanoCpus}`);
      assert.equal(host?.Memory, 4 * 1024 ** 3);
    });

    test('a pod of an image that cannot be found becomes ERROR with a reason naming the image, not a 5xx or a hang', async () => {
      const missing = `gantry-test/never-built-${namespace}:1`;
      const res = await call('POST', '/v2/pods', { name: 'missing', gpu: { id: GPU, count: 1 }, image: missing });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      const pod = await podUntil(res.body.id, 'to be ERROR', (p) => p.status === 'ERROR');
      assert.match(pod.statusReason ?? '', new RegExp(missing.replace(/[/.]/g, '\\$&')));
      await action(pod.id, 'terminate');
    });

    test("a pod whose mount the engine refuses becomes ERROR saying why, in its statusReason and its ERROR log line, without the host's paths; the operator's log has them", async () => {
      const dataRoot = (await e.client.info()).DockerRootDir!;
      // /etc/mtab passes the mount path rule; the engine refuses a volume there, naming folders of the host.
      const created = await createPod({
        image: e.images.http,
        ports: ['8000/http'],
        mounts: { persistent: { size: 10, path: '/etc/mtab' } },
      });
      const pod = await podUntil(created.id, 'to be ERROR', (p) => p.status === 'ERROR');
      const reason = pod.statusReason ?? '';
      assert.match(reason, /error mounting "<volume>" to rootfs at "\/etc\/mtab"/);
      const logs = await readSse(`${server!.url}/v2/pods/${pod.id}/logs?source=system`, {
        headers: { authorization: `Bearer ${KEY}` },
      });
      const errorLine = logs.events
        .map((ev) => (JSON.parse(ev.data) as { line: string }).line)
        .find((l) => l.startsWith('ERROR: '));
      assert.ok(errorLine?.includes('<volume>'), JSON.stringify(logs.events));
      for (const shown of [reason, errorLine!, JSON.stringify(await getPod(pod.id))])
        assert.ok(!shown.includes(dataRoot) && !shown.includes('/_data') && !shown.includes('overlay2'), shown);
      assert.ok(server!.output().includes(`${dataRoot}/volumes/`), "the operator's log has the engine's message whole");
      await action(pod.id, 'terminate');
    });

    test('a pod or template naming a registry on the host`s loopback is refused with 400 IMAGE_NOT_ALLOWED, and no container is made', async () => {
      const pod = await call('POST', '/v2/pods', {
        name: 'ssrf',
        gpu: { id: GPU, count: 1 },
        image: '127.0.0.1:2375/x:1',
      });
      assert.equal(pod.status, 400, JSON.stringify(pod.body));
      assert.equal(pod.body.code, 'IMAGE_NOT_ALLOWED');
      assert.match(
        pod.body.detail,
        /its registry 127\.0\.0\.1:2375 is not a public address \(loopback\).*runtime\.docker\.registries\.allow/,
      );
      const tpl = await call('POST', '/v2/templates', {
        name: `ssrf-${Date.now()}`,
        image: 'localhost:5000/worker:1',
        serverless: true,
      });
      assert.equal(tpl.status, 400, JSON.stringify(tpl.body));
      assert.equal(tpl.body.code, 'IMAGE_NOT_ALLOWED');
      const containers = await e.client.listContainers({ all: true, filters: namespaceFilter(namespace) });
      assert.deepEqual(
        containers.filter((c) => c.Image.startsWith('127.0.0.1:2375/') || c.Image.startsWith('localhost:5000/')),
        [],
      );
    });

    test("a pod whose container is killed behind Gantry's back follows it: EXITED or ERROR with a reason", async () => {
      const created = await createPod({ image: e.images.http, ports: ['8000/http'] });
      const pod = await podUntil(created.id, 'to be RUNNING', (p) => p.status === 'RUNNING');
      const [container] = await containersOf(pod.id);
      await e.client.killContainer(container!.Id, 'SIGKILL');
      const after = await podUntil(
        pod.id,
        'to follow its container',
        (p) => p.status === 'EXITED' || p.status === 'ERROR',
        20_000,
      );
      assert.match(after.statusReason ?? '', /exit|137|kill/i);
      await action(pod.id, 'terminate');
    });

    test('with the engine unreachable pod create is a 503 RUNTIME_UNAVAILABLE problem; when it is back a running pod is reconciled, still RUNNING with its reason cleared', async () => {
      const created = await createPod({ image: e.images.http, ports: ['8000/http'] });
      const pod = await podUntil(created.id, 'to be RUNNING', (p) => p.status === 'RUNNING');
      const { bootId } = await instanceInfo(publicPort(pod, 8000));

      await proxy.cut();
      try {
        const refused = await eventually(
          'create to answer 503',
          async () => {
            const res = await call('POST', '/v2/pods', {
              name: 'during-outage',
              gpu: { id: GPU, count: 1 },
              image: e.images.http,
            });
            if (res.status === 201) await call('POST', `/v2/pods/${res.body.id}/action`, { action: 'terminate' });
            return res.status === 503 ? res : null;
          },
          15_000,
        );
        assert.match(refused.type, /application\/problem\+json/);
        assert.equal(refused.body.code, 'RUNTIME_UNAVAILABLE', JSON.stringify(refused.body));
        assert.match(JSON.stringify(refused.body), /unreachable/);
        const during = await podUntil(
          pod.id,
          'to say the engine is unreachable',
          (p) => /unreachable/.test(p.statusReason ?? ''),
          15_000,
        );
        assert.equal(during.status, 'RUNNING', 'a pod keeps its status while the engine is away');
      } finally {
        await proxy.start();
      }
      const back = await podUntil(
        pod.id,
        'to be reconciled',
        (p) => p.status === 'RUNNING' && p.statusReason === null,
        20_000,
      );
      assert.equal((await instanceInfo(publicPort(back, 8000))).bootId, bootId, 'the container kept running');
      await action(pod.id, 'terminate');
    });
  });
}
