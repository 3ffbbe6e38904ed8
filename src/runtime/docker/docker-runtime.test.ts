import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  dockerEngine,
  instanceInfo,
  makeDockerRuntime,
  noEngine,
  testHost,
  type RuntimeFixture,
} from '../../../test/support/docker.js';
import {
  ChangeRecorder,
  describeRuntime,
  freePort,
  instanceSpec,
  waitFor,
  type RuntimeUnderTest,
} from '../runtime-contract.js';
import type { DockerRuntimeOptions } from './docker-runtime-options.js';
import { HTTP_ENTRYPOINT } from '../../../test/support/docker-images.js';

const engine = await dockerEngine();
after(() => engine?.client.close());

if (!engine) {
  test('the Docker runtime', { skip: noEngine() }, () => {});
} else {
  const e = engine;
  describeRuntime('docker', async (): Promise<RuntimeUnderTest> => {
    const fixture = makeDockerRuntime(e);
    const reopened: RuntimeFixture[] = [];
    return {
      runtime: fixture.runtime,
      images: e.images,
      adoptsAfterClose: true,
      entrypointOverride: true,
      httpEntrypoint: HTTP_ENTRYPOINT,
      reopen: async () => {
        const again = makeDockerRuntime(e, { namespace: fixture.namespace });
        reopened.push(again);
        return again.runtime;
      },
      cleanup: async () => {
        for (const r of reopened) await r.runtime.close();
        await fixture.cleanup();
      },
    };
  });

  /** Runs `body` with a fresh runtime on its own namespace, removing all it made afterwards. */
  const withRuntime = async (
    body: (t: RuntimeFixture) => Promise<void>,
    overrides: Partial<DockerRuntimeOptions> = {},
  ): Promise<void> => {
    const t = makeDockerRuntime(e, overrides);
    try {
      await body(t);
    } finally {
      await t.cleanup();
    }
  };
  const httpSpec = async (overrides: Parameters<typeof instanceSpec>[0] = {}) =>
    instanceSpec({
      image: e.images.http,
      vcpus: 1,
      memoryGb: 1,
      ports: [{ private: 8000, public: await freePort(), protocol: 'http' }],
      ...overrides,
    });
  const info = instanceInfo;
  const containerOf = (t: RuntimeFixture, id: string) => e.client.inspectContainer(`gantry-${t.namespace}-${id}`);

  describe('DockerRuntime', () => {
    test('every port binding, http or tcp, is published and answers on 127.0.0.1', () =>
      withRuntime(async ({ runtime }) => {
        const [web, raw] = [await freePort(), await freePort()];
        const spec = instanceSpec({
          image: e.images.http,
          vcpus: 1,
          memoryGb: 1,
          ports: [
            { private: 8000, public: web, protocol: 'http' },
            { private: 8000, public: raw, protocol: 'tcp' },
          ],
        });
        const changes = new ChangeRecorder(runtime);
        await runtime.start(spec);
        await changes.next(spec.id, 'running', 30_000);
        assert.equal(
          (await info(web)).env.GANTRY_PORT_8000,
          String(web),
          'the first binding of a private port names it',
        );
        assert.equal((await info(raw)).env.RUNPOD_TCP_PORT_8000, String(raw));
      }));

    test('a spec’s own health probe gates running, with no images map: starting until it answers, then running', () =>
      withRuntime(
        async ({ runtime }) => {
          const health = { type: 'http', port: 8000, path: '/health', intervalMs: 25, timeoutMs: 30_000 } as const;
          const probed = await httpSpec({ env: { LISTEN_AFTER_MS: '400' }, health });
          const plain = await httpSpec({ env: { LISTEN_AFTER_MS: '400' } });
          const changes = new ChangeRecorder(runtime);
          assert.equal(
            (await runtime.start(plain)).state,
            'running',
            'without a probe, running once the container starts',
          );
          const started = await runtime.start(probed);
          assert.equal(started.state, 'starting');
          await changes.next(probed.id, 'running', 30_000);
          assert.deepEqual(changes.statesOf(probed.id), ['starting', 'running']);
          // Running means it answers.
          assert.equal((await info(probed.ports[0]!.public)).env.LISTEN_AFTER_MS, '400');
        },
        { images: {} },
      ));

    test('a tenant cannot override the platform variables; platformEnv wins over the tenant env', () =>
      withRuntime(async ({ runtime }) => {
        const spec = await httpSpec({
          env: {
            GREETING: 'hi',
            GANTRY_INSTANCE_ID: 'spoof',
            RUNPOD_PUBLIC_IP: '6.6.6.6',
            CUDA_VISIBLE_DEVICES: '0',
            SHARED: 'tenant',
          },
          platformEnv: { SHARED: 'platform', RUNPOD_POD_ID: 'spoof' },
          vcpus: 2,
        });
        const changes = new ChangeRecorder(runtime);
        await runtime.start(spec);
        await changes.next(spec.id, 'running', 30_000);
        const { env } = await info(spec.ports[0]!.public);
        assert.equal(env.GREETING, 'hi');
        assert.equal(env.SHARED, 'platform');
        assert.equal(env.GANTRY_INSTANCE_ID, spec.id);
        assert.equal(env.RUNPOD_POD_ID, spec.id);
        assert.equal(env.RUNPOD_PUBLIC_IP, '127.0.0.1');
        assert.equal(env.CUDA_VISIBLE_DEVICES, '');
        assert.equal(env.NVIDIA_VISIBLE_DEVICES, 'none');
        assert.equal(env.RUNPOD_CPU_COUNT, '2');
      }));

    test('on an env-only GPU host an instance is told its GPUs by UUID, with no device request', () =>
      withRuntime(
        async ({ runtime, namespace }) => {
          const spec = await httpSpec({ gpuIndices: [2, 0] });
          const changes = new ChangeRecorder(runtime);
          await runtime.start(spec);
          await changes.next(spec.id, 'running', 30_000);
          const { env } = await info(spec.ports[0]!.public);
          assert.equal(env.CUDA_VISIBLE_DEVICES, 'GPU-cc,GPU-aa');
          assert.equal(env.NVIDIA_VISIBLE_DEVICES, 'GPU-cc,GPU-aa');
          assert.equal(env.RUNPOD_GPU_COUNT, '2');
          const container = (await e.client.inspectContainer(`gantry-${namespace}-${spec.id}`)) as unknown as {
            HostConfig: { DeviceRequests: unknown[] | null };
          };
          assert.equal(container.HostConfig.DeviceRequests?.length ?? 0, 0);
        },
        { host: testHost({ gpuCount: 3, gpuUuids: ['GPU-aa', 'GPU-bb', 'GPU-cc'], gpuMode: 'env-only' }) },
      ));

    test('a stopped instance keeps its container (with its logs) until the next start, which makes a new one: the container disk is wiped on every start', () =>
      withRuntime(async (t) => {
        const { runtime } = t;
        const spec = await httpSpec();
        const changes = new ChangeRecorder(runtime);
        await runtime.start(spec);
        await changes.next(spec.id, 'running', 30_000);
        const first = await containerOf(t, spec.id);
        const firstBoot = (await info(spec.ports[0]!.public)).bootId;
        await runtime.stop(spec.id);
        assert.equal(await runtime.inspect(spec.id), null);
        const kept = await containerOf(t, spec.id);
        assert.equal(kept?.Id, first?.Id, 'stop keeps the container');
        assert.equal(kept?.State.Running, false);

        const again = new ChangeRecorder(runtime);
        await runtime.start(spec);
        await again.next(spec.id, 'running', 30_000);
        assert.notEqual((await containerOf(t, spec.id))?.Id, first?.Id, 'a start makes a new container');
        assert.notEqual((await info(spec.ports[0]!.public)).bootId, firstBoot, 'its process started again');
        await runtime.stop(spec.id);

        const changed = { ...spec, env: { ...spec.env, NEW: 'yes' } };
        const third = new ChangeRecorder(runtime);
        await runtime.start(changed);
        await third.next(spec.id, 'running', 30_000);
        assert.notEqual((await containerOf(t, spec.id))?.Id, first?.Id, 'a changed spec makes a new container');
        assert.equal((await info(spec.ports[0]!.public)).env.NEW, 'yes');
      }));

    test('an image that exists nowhere rejects the start with a reason a user can act on, and leaves nothing behind', () =>
      withRuntime(
        async (t) => {
          const spec = instanceSpec({ image: '127.0.0.1:9/gantry-no-such/image:1' });
          const began = Date.now();
          await assert.rejects(t.runtime.start(spec), (err: Error) => {
            assert.match(err.message, /^pulling image "127\.0\.0\.1:9\/gantry-no-such\/image:1": .*connection refused/);
            return true;
          });
          assert.ok(Date.now() - began < 20_000, 'no hang');
          assert.equal(await t.runtime.inspect(spec.id), null);
          assert.equal(await containerOf(t, spec.id), null);
          // The runtime still works.
          const next = instanceSpec({ image: e.images.idle });
          await t.runtime.start(next);
          assert.ok(await t.runtime.inspect(next.id));
        },
        { registries: { allow: ['127.0.0.1:9'], only: false, private: 'refuse' } },
      ));

    test('a pull from a registry on loopback is refused before the engine is asked: the registry sees no request, unless the operator allows it', async () => {
      // What a tenant would aim the engine at: a plain-HTTP service on the host's loopback.
      const seen: string[] = [];
      const registry = createServer((req, res) => {
        seen.push(`${req.method} ${req.url}`);
        res
          .writeHead(404, { 'content-type': 'application/json', 'docker-distribution-api-version': 'registry/2.0' })
          .end('{"errors":[{"code":"NAME_UNKNOWN","message":"unknown"}]}');
      });
      await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
      const target = `127.0.0.1:${(registry.address() as AddressInfo).port}`;
      try {
        await withRuntime(async (t) => {
          const spec = instanceSpec({ image: `${target}/internal/admin:1` });
          await assert.rejects(t.runtime.start(spec), (err: Error) => {
            assert.match(
              err.message,
              new RegExp(
                `^pulling image "${target.replace(/\./g, '\\.')}/internal/admin:1": refused: its registry ${target.replace(/\./g, '\\.')} is not a public address \\(loopback\\).*runtime\\.docker\\.registries\\.allow$`,
              ),
            );
            return true;
          });
          assert.deepEqual(seen, [], 'the engine never contacted the registry');
          assert.equal(await t.runtime.inspect(spec.id), null);
          assert.equal(await containerOf(t, spec.id), null, 'nothing is left behind');
        });
        // The same start under an operator's allow list reaches the registry: the refusal above was the policy's.
        await withRuntime(
          async (t) => {
            await assert.rejects(
              t.runtime.start(instanceSpec({ image: `${target}/internal/admin:1` })),
              /pulling image .*(not found|unknown|manifest)/i,
            );
            assert.ok(seen.length > 0, 'the engine asked the allowed registry');
          },
          { registries: { allow: [target], only: false, private: 'refuse' } },
        );
      } finally {
        registry.closeAllConnections();
        registry.close();
      }
    });

    test('a suspended instance`s container is paused on the engine, and a pause or unpause outside Gantry is followed, and adopted as it is', () =>
      withRuntime(async (t) => {
        const spec = instanceSpec({ image: e.images.idle });
        const changes = new ChangeRecorder(t.runtime);
        await t.runtime.start(spec);
        await changes.next(spec.id, 'running');
        await t.runtime.suspend(spec.id);
        assert.equal((await containerOf(t, spec.id))?.State.Paused, true, 'the engine paused it');
        await t.runtime.resume(spec.id);
        assert.equal((await containerOf(t, spec.id))?.State.Paused, false);

        const { Id } = (await containerOf(t, spec.id))!;
        await e.client.pauseContainer(Id);
        await waitFor('the pause outside Gantry read as suspended', () =>
          changes.statesOf(spec.id).filter((s) => s === 'suspended').length === 2 ? true : null,
        );
        assert.equal((await t.runtime.inspect(spec.id))?.state, 'suspended');
        await e.client.unpauseContainer(Id);
        await waitFor('the unpause outside Gantry read as running', async () =>
          (await t.runtime.inspect(spec.id))?.state === 'running' ? true : null,
        );

        // Paused outside Gantry while no runtime watches: a fresh runtime's attach() adopts it as suspended.
        await t.runtime.close();
        await e.client.pauseContainer(Id);
        const again = makeDockerRuntime(e, { namespace: t.namespace });
        try {
          const found = (await again.runtime.attach()).find((a) => a.id === spec.id);
          assert.equal(found?.status?.state, 'suspended');
          await again.runtime.resume(spec.id);
          assert.equal((await containerOf(t, spec.id))?.State.Paused, false);
        } finally {
          await again.runtime.close();
        }
      }));

    test('a container killed behind the runtime`s back becomes exited, with its signal', () =>
      withRuntime(async (t) => {
        const spec = instanceSpec({ image: e.images.idle });
        const changes = new ChangeRecorder(t.runtime);
        await t.runtime.start(spec);
        const container = await containerOf(t, spec.id);
        await e.client.killContainer(container!.Id, 'SIGKILL');
        const exited = await changes.next(spec.id, 'exited', 15_000);
        assert.equal(exited.exitCode, 137);
        assert.match(exited.reason ?? '', /killed by SIGKILL/);
      }));

    test('a container the kernel kills for its memory limit fails, saying so', () =>
      withRuntime(async (t) => {
        const spec = instanceSpec({
          image: e.images.node,
          memoryGb: 0.0625,
          args: `-e "console.log('allocating'); const keep = []; for (;;) keep.push(Buffer.alloc(1 << 20, 1))"`,
        });
        const changes = new ChangeRecorder(t.runtime);
        await t.runtime.start(spec);
        const failed = await changes.next(spec.id, 'failed', 30_000);
        assert.equal(failed.exitCode, 137);
        assert.match(
          failed.reason ?? '',
          /^process was killed for running out of memory \(its limit of 0\.06 GiB\), exit code 137; last output:\n[^]*allocating/,
        );
      }));

    test('an instance that never passes its health check fails with the reason and its container is stopped', () =>
      withRuntime(
        async (t) => {
          const spec = await httpSpec({ env: { LISTEN_AFTER_MS: '600000' } });
          const changes = new ChangeRecorder(t.runtime);
          await t.runtime.start(spec);
          const failed = await changes.next(spec.id, 'failed', 15_000);
          assert.match(
            failed.reason ?? '',
            /^health check http:\/\/127\.0\.0\.1:\d+\/health did not pass within 400 ms/,
          );
          for (let i = 0; i < 100 && (await containerOf(t, spec.id))?.State.Running; i++)
            await new Promise((r) => setTimeout(r, 100));
          assert.equal((await containerOf(t, spec.id))?.State.Running, false);
          assert.equal((await t.runtime.inspect(spec.id))?.state, 'failed');
        },
        {
          images: {
            [e.images.http]: {
              command: ['unused'],
              health: { type: 'http', port: 8000, path: '/health', intervalMs: 50, timeoutMs: 400 },
            },
          },
        },
      ));

    test('a disk size the storage driver cannot enforce starts without it, and the runtime says so', () =>
      withRuntime(async (t) => {
        const spec = instanceSpec({ image: e.images.idle, diskGb: 5 });
        await t.runtime.start(spec);
        const info = await e.client.info();
        const backing = info.DriverStatus?.find(([k]) => k === 'Backing Filesystem')?.[1];
        if (info.Driver === 'overlay2' && backing !== 'xfs') {
          assert.equal(t.runtime.diskLimit.enforced, false);
          assert.match(t.runtime.diskLimit.note ?? '', /not enforced/);
        }
        assert.equal((await t.runtime.inspect(spec.id))?.id, spec.id);
      }));

    test('a networked instance joins its private network, made on first use and labelled, with its aliases', () =>
      withRuntime(async (t) => {
        const spec = instanceSpec({
          image: e.images.idle,
          network: { name: 'acct1', aliases: [`x${Date.now()}.gantry`], ip: '10.200.0.9' },
        });
        await t.runtime.start(spec);
        const network = await e.client.inspectNetwork(`gantry-${t.namespace}-acct1`);
        assert.equal(network?.Labels?.['gantry.namespace'], t.namespace);
        const container = (await containerOf(t, spec.id)) as unknown as {
          NetworkSettings: { Networks: Record<string, { Aliases: string[] | null }> };
        };
        const endpoint = container.NetworkSettings.Networks[`gantry-${t.namespace}-acct1`];
        assert.ok(
          endpoint?.Aliases?.includes(spec.network!.aliases[0]!),
          `aliases: ${JSON.stringify(endpoint?.Aliases)}`,
        );
      }));

    test("a cluster's members share a network made on the cluster's subnet, each at its fixed address, reach rank 0 at MASTER_ADDR, and it goes with the last member", () =>
      withRuntime(async (t) => {
        // a subnet of its own per run (outside the server's 10.65-10.80 range), so runs sharing the engine do not collide
        const third = Math.floor(Math.random() * 256);
        const second = 90 + Math.floor(Math.random() * 10);
        const subnet = `10.${second}.${third}.0/24`;
        const ip = (rank: number) => `10.${second}.${third}.${2 + rank}`;
        const network = (rank: number) => ({ name: 'cluster-c1', aliases: [`node-${rank}`], ip: ip(rank), subnet });
        const changes = new ChangeRecorder(t.runtime);
        const head = await httpSpec({ network: network(0) });
        await t.runtime.start(head);
        await changes.next(head.id, 'running', 30_000);
        const worker = instanceSpec({
          image: e.images.node,
          args: `-e "fetch('http://' + process.env.MASTER_ADDR + ':8000/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(2))"`,
          platformEnv: { MASTER_ADDR: ip(0), NODE_RANK: '1' },
          network: network(1),
        });
        await t.runtime.start(worker);
        const ended = await changes.next(worker.id, 'exited', 30_000);
        assert.equal(ended.exitCode, 0, `rank 1 reached rank 0 at ${ip(0)}: ${ended.reason ?? ''}`);
        const made = await e.client.inspectNetwork(`gantry-${t.namespace}-cluster-c1`);
        assert.deepEqual(
          made?.IPAM.Config?.map((c) => c.Subnet),
          [subnet],
        );
        const container = (await containerOf(t, head.id)) as unknown as {
          NetworkSettings: { Networks: Record<string, { IPAddress: string }> };
        };
        assert.equal(container.NetworkSettings.Networks[`gantry-${t.namespace}-cluster-c1`]?.IPAddress, ip(0));
        // the network goes with the cluster's last member
        await t.runtime.remove(worker.id);
        assert.ok(await e.client.inspectNetwork(`gantry-${t.namespace}-cluster-c1`), 'kept while rank 0 uses it');
        await t.runtime.remove(head.id);
        assert.equal(await e.client.inspectNetwork(`gantry-${t.namespace}-cluster-c1`), null);
      }));
  });
}
