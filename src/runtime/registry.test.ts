import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { TSchema } from '@sinclair/typebox';
import { loadConfig } from '../config.js';
import { ConfigFileSchema } from '../config-schema.js';
import { systemClock } from '../domain/clock.js';
import type { Config } from '../config.js';
import type { Db } from '../store/database.js';
import type { FleetService } from '../fleet/fleet-service.js';
import { dockerRuntimeModule, type DockerRuntimeModule } from './docker/module.js';
import type { DockerRuntimeOptions } from './docker/docker-runtime-options.js';
import { configuredRuntime, prepareRuntime, runtimeModule, runtimeModules } from './registry.js';
import { RuntimeStartRefused, type BuiltRuntime, type RuntimeModule } from './runtime-module.js';
import type { Runtime } from './runtime.js';
import { fetchEngineInfo } from './docker/engine-info.js';
import { BANNER_12_4, removeStandIns, standInNvidiaSmi, TWO_4090 } from '../../test/support/nvidia-smi.js';

const dataDir = mkdtempSync(join(tmpdir(), 'gantry-create-runtime-'));
after(() => {
  removeStandIns();
  rmSync(dataDir, { recursive: true, force: true });
});
const logger = pino({ level: 'silent' });
const dockerHost = process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock';

// Awaited before any test is declared: a test declared earlier would let the file's root after hooks run before the later ones.
const reachable = await fetchEngineInfo(dockerHost, { timeoutMs: 3000 }).then(
  () => false as const,
  (err: Error) => `no Docker Engine at ${dockerHost} (${err.message}); set DOCKER_HOST`,
);
const config = (env: Record<string, string> = {}) => loadConfig({ env: { GANTRY_DATA_DIR: dataDir, ...env } });

/**
 * Builds the runtime `c` names the way the server does, over a platform the process and Docker
 * runtimes never touch (the fleet's is built by the server tests: test/fleet-*.test.ts).
 */
async function build(
  c: Config,
  options: { env?: NodeJS.ProcessEnv; module?: RuntimeModule<unknown> } = {},
): Promise<BuiltRuntime> {
  const prepared = await prepareRuntime(c, { logger, ...options });
  const unused = new Proxy({}, { get: () => assert.fail('the platform is not used by this runtime') });
  return prepared.create({
    config: c,
    clock: systemClock,
    logger,
    db: unused as Db,
    relay: null,
    agents: unused as FleetService,
    usage: { pause: async () => undefined, resume: async () => undefined },
  });
}

test('every runtime kind the config schema offers has a module, and every module a distinct kind', () => {
  const kinds = runtimeModules().map((m) => m.kind);
  assert.equal(new Set(kinds).size, kinds.length);
  for (const kind of ['process', 'docker', 'fleet']) assert.equal(runtimeModule(kind).kind, kind);
  assert.throws(() => runtimeModule('kubernetes'), /no runtime of kind "kubernetes"/);
});

test('each runtime’s config section, declared by its module beside it, is what the config file’s schema holds at its path', () => {
  const sections = runtimeModules().flatMap((m) => (m.configSection ? [{ kind: m.kind, ...m.configSection }] : []));
  assert.deepEqual(
    sections.map((s) => s.kind),
    ['process', 'docker', 'fleet'],
    'the runtimes of a build with settings declare their section',
  );
  for (const { kind, path, schema } of sections) {
    const composed = path
      .split('.')
      .reduce<TSchema | undefined>(
        (node, key) => (node?.properties as Record<string, TSchema> | undefined)?.[key],
        ConfigFileSchema,
      );
    assert.deepStrictEqual(composed, schema, `runtime ${kind}: ${path}`);
  }
});

test('the runtime the config names is its module', () => {
  assert.equal(configuredRuntime(config()).kind, 'process');
  assert.equal(configuredRuntime(config({ GANTRY_RUNTIME: 'fleet' })).hostSource, 'joined');
});

test('the process runtime is built with the config’s fleet as its hosts', async () => {
  const c = config();
  const { runtime, hosts } = await build(c);
  try {
    assert.equal(runtime.name, 'process');
    assert.deepEqual(hosts.current(), c.fleet);
  } finally {
    await runtime.close();
  }
});

test('the docker runtime refuses to start when its engine does not answer, naming the socket and the way out', async () => {
  const c = config({ GANTRY_RUNTIME: 'docker', DOCKER_HOST: `unix://${join(dataDir, 'no-engine.sock')}` });
  await assert.rejects(
    build(c, { module: dockerRuntimeModule(() => assert.fail('no runtime is built without an engine')) }),
    (err: Error) => {
      assert.ok(err instanceof RuntimeStartRefused);
      assert.match(
        err.message,
        new RegExp(
          `^refusing to start with runtime docker: cannot reach the Docker Engine at unix://${join(dataDir, 'no-engine.sock')}: connect ENOENT`,
        ),
      );
      assert.match(err.message, /DOCKER_HOST \(or runtime\.docker\.host\)/);
      assert.match(err.message, /GANTRY_RUNTIME=process/);
      return true;
    },
  );
});

test(
  'the docker runtime is built for the discovered host with the config’s engine, namespace, bind address, images and grace',
  { skip: reachable },
  async () => {
    const { env } = standInNvidiaSmi({ csv: TWO_4090, banner: BANNER_12_4 });
    const c = config({ GANTRY_RUNTIME: 'docker', DOCKER_HOST: dockerHost });
    let built: DockerRuntimeOptions | undefined;
    class Recording {
      readonly name = 'docker';
      constructor(options: DockerRuntimeOptions) {
        built = options;
      }
    }
    const module = { DockerRuntime: Recording as unknown as DockerRuntimeModule['DockerRuntime'] };
    const { runtime, hosts } = await build(c, { env, module: dockerRuntimeModule(async () => module) });
    assert.ok(runtime instanceof Recording);
    assert.ok(built);
    assert.equal(built.dockerHost, dockerHost);
    assert.equal(built.namespace, c.runtime.docker.namespace);
    assert.equal(built.bindIp, '0.0.0.0');
    assert.equal(built.stopGraceMs, c.pods.stopGraceMs);
    assert.equal(built.images, c.images);
    assert.deepEqual(hosts.current(), [built.host]);
    assert.equal(built.host.gpuTypeId, 'NVIDIA GeForce RTX 4090');
    assert.equal(built.host.gpuUuids?.length, 2);
  },
);

test('a build without the Docker runtime module refuses runtime docker, saying so', { skip: reachable }, async () => {
  const c = config({ GANTRY_RUNTIME: 'docker', DOCKER_HOST: dockerHost });
  const missing = './docker/no-such-docker-runtime.js';
  await assert.rejects(
    build(c, {
      module: dockerRuntimeModule(
        () => import(missing) as Promise<{ DockerRuntime: new (o: DockerRuntimeOptions) => Runtime }>,
      ),
    }),
    /^RuntimeStartRefused: refusing to start with runtime docker: this build of gantry has no Docker runtime/,
  );
});
