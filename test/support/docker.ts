/**
 * The Docker runtime's test support: the engine (DOCKER_HOST, else /var/run/docker.sock) when one
 * answers, a namespace of its own per runtime made here (so test runs share one engine without
 * touching each other's containers), the test images (docker-images.ts), and the removal of
 * everything a namespace holds.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import pino from 'pino';
import type { HealthProbe, ImageSpec } from '../../src/config.js';
import type { Host } from '../../src/domain/catalog.js';
import { systemClock } from '../../src/domain/clock.js';
import { DockerClient } from '../../src/runtime/docker/docker-client.js';
import { namespaceFilter } from '../../src/runtime/docker/docker-names.js';
import type { DockerRuntimeOptions } from '../../src/runtime/docker/docker-runtime-options.js';
import { DockerRuntime } from '../../src/runtime/docker/docker-runtime.js';
import { buildTestImages } from './docker-images.js';
import { freePortRange } from './eventually.js';

export const DOCKER_HOST = process.env.DOCKER_HOST || 'unix:///var/run/docker.sock';

export interface DockerEngine {
  dockerHost: string;
  client: DockerClient;
  images: Awaited<ReturnType<typeof buildTestImages>>;
}

let engine: Promise<DockerEngine | null> | null = null;
let skipReason = '';

/**
 * The engine with the test images built, or null (and {@link noEngine} says why) when none
 * answers within a second — except under CI=true, where that rejects. Once per test file.
 */
export function dockerEngine(): Promise<DockerEngine | null> {
  engine ??= (async () => {
    const client = new DockerClient({ dockerHost: DOCKER_HOST, timeoutMs: 120_000 });
    try {
      await client.ping(1_000);
    } catch (err) {
      client.close();
      skipReason = `no Docker Engine answers at ${DOCKER_HOST} (${(err as Error).message}); set DOCKER_HOST to run the Docker tests`;
      // CI starts an engine (.ci/run): there a missing one is a failure, never a quiet skip.
      if (process.env.CI === 'true') throw new Error(`CI=true: ${skipReason}`, { cause: err });
      return null;
    }
    return { dockerHost: DOCKER_HOST, client, images: await buildTestImages(client) };
  })();
  return engine;
}

/** Why the Docker tests are skipped (after {@link dockerEngine} answered null). */
export const noEngine = (): string => skipReason;

let seq = 0;
/** A namespace no other run uses: `t<pid><random><n>`. */
export function uniqueNamespace(): string {
  seq += 1;
  return `t${process.pid.toString(36)}${randomBytes(3).toString('hex')}${seq}`;
}

/** Removes every container, volume and network labelled with `namespace` (and nothing else). */
export async function removeNamespace(client: DockerClient, namespace: string): Promise<void> {
  const filters = namespaceFilter(namespace);
  const containers = await client.listContainers({ all: true, filters });
  await Promise.all(containers.map((c) => client.removeContainer(c.Id, { force: true, volumes: true })));
  const volumes = await client.listVolumes(filters);
  await Promise.all(volumes.map((v) => client.removeVolume(v.Name)));
  const networks = await client.listNetworks(filters);
  await Promise.all(networks.map((n) => client.removeNetwork(n.Id)));
}

/** This machine as the Docker runtime's host. */
export const testHost = (overrides: Partial<Host> = {}): Host => ({
  id: 'local',
  dataCenterId: 'local',
  cloud: 'SECURE',
  cudaVersion: null,
  gpuTypeId: null,
  gpuCount: 0,
  cpuFlavors: ['cpu3c'],
  vcpus: 2,
  memoryGb: 8,
  diskGb: 100,
  portRange: [30000, 40000],
  publicIp: '127.0.0.1',
  ...overrides,
});

const probe = (port: number, timeoutMs = 20_000): HealthProbe => ({
  type: 'http',
  port,
  path: '/health',
  intervalMs: 25,
  timeoutMs,
});

/** The images map the runtime is given: only `health` matters to it. */
const testImageSpecs = (images: DockerEngine['images']): Record<string, ImageSpec> => ({
  [images.http]: { command: ['unused'], health: probe(8000) },
});

export interface RuntimeFixture {
  runtime: DockerRuntime;
  namespace: string;
  /** Closes the runtime (if still open) and removes all its namespace holds. */
  cleanup(): Promise<void>;
}

/** A Docker runtime over its own namespace, publishing on 127.0.0.1. */
export function makeDockerRuntime(e: DockerEngine, overrides: Partial<DockerRuntimeOptions> = {}): RuntimeFixture {
  const namespace = overrides.namespace ?? uniqueNamespace();
  const runtime = new DockerRuntime({
    dockerHost: e.dockerHost,
    namespace,
    host: testHost(),
    bindIp: '127.0.0.1',
    images: testImageSpecs(e.images),
    clock: systemClock,
    logger: pino({ level: process.env.GANTRY_TEST_LOG ?? 'silent' }),
    stopGraceMs: 2_000,
    reconnect: { initialMs: 50, maxMs: 500 },
    ...overrides,
  });
  return {
    runtime,
    namespace,
    cleanup: async () => {
      await runtime.close();
      await removeNamespace(e.client, namespace);
    },
  };
}

/**
 * One HTTP exchange with an instance on 127.0.0.1, on a fresh connection: a pooled keep-alive
 * connection (fetch's) can outlive the container behind a published port and fail its next use.
 */
export function instanceHttp(
  port: number,
  method: 'GET' | 'PUT',
  path: string,
  body?: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, agent: false, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path} on port ${port}: no answer within 10 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** `GET /info` of the http fixture. */
export async function instanceInfo(
  port: number,
): Promise<{ env: Record<string, string>; argv: string[]; bootId: string }> {
  const res = await instanceHttp(port, 'GET', '/info');
  if (res.status !== 200) throw new Error(`GET /info on port ${port} answered ${res.status}`);
  return JSON.parse(res.text) as { env: Record<string, string>; argv: string[]; bootId: string };
}

/**
 * The `runtime` section of a whole test server on the test engine: its own namespace and free
 * published ports on 127.0.0.1, a CPU host in US-TX-3, and this machine's own firewall untouched.
 * `docker` adds or replaces keys (a stand-in nvidia-smi, a GPU mode).
 */
export async function testDockerRuntime(namespace: string, docker: Record<string, unknown> = {}) {
  return {
    kind: 'docker',
    docker: {
      host: DOCKER_HOST,
      namespace,
      bindIp: '127.0.0.1',
      publicIp: '127.0.0.1',
      portRange: await freePortRange(10),
      cpuFlavors: ['cpu3c'],
      dataCenterId: 'US-TX-3',
      firewall: { mode: 'off' },
      ...docker,
    },
  };
}
