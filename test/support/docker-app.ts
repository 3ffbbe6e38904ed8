/**
 * An app on runtime docker without an engine: the services as production builds them for
 * `runtime: docker`, over the in-memory runtime (nothing is pulled) on one host as discovery would
 * describe it, with registry host names resolved from a fixed table (no DNS traffic).
 */
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import type { Host } from '../../src/domain/catalog.js';
import type { ResolveAddresses } from '../../src/runtime/registry-guard.js';
import { FakeRuntime } from './fake-runtime/fake-runtime.js';
import { createTestApp, json, type TestApp } from './harness.js';

const GPU = 'NVIDIA GeForce RTX 4090';

/** The engine's host, as discovery would describe it. */
const DOCKER_HOST_RECORD: Host = {
  id: 'engine-host',
  dataCenterId: 'US-TX-3',
  cloud: 'SECURE',
  cudaVersion: '12.4',
  gpuTypeId: GPU,
  gpuCount: 8,
  cpuFlavors: ['cpu3c'],
  vcpus: 64,
  memoryGb: 512,
  diskGb: 2000,
  portRange: [30000, 30999],
  publicIp: '203.0.113.7',
  gpuUuids: [0, 1, 2, 3, 4, 5, 6, 7].map((i) => `GPU-${i}`),
  gpuMode: 'env-only',
};

/** Registry host names as a DNS answers them here; anything else does not resolve. */
const registryDns: ResolveAddresses = async (host) => {
  const table: Record<string, string[]> = {
    'registry.corp.example': ['10.20.30.40'],
    'metadata.corp.example': ['169.254.169.254'],
    'public.example': ['93.184.216.34'],
  };
  const found = table[host];
  if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return found;
};

/** An app on runtime docker, over the in-memory runtime. */
export async function dockerApp(registries?: Record<string, unknown>): Promise<{ t: TestApp; runtime: FakeRuntime }> {
  const runtime = new FakeRuntime();
  const t = await createTestApp({
    runtime,
    hosts: [DOCKER_HOST_RECORD],
    registryResolver: registryDns,
    file: {
      runtime: { kind: 'docker', docker: registries ? { registries } : {} },
      rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 },
    },
  });
  return { t, runtime };
}

/** Asserts a 400 IMAGE_NOT_ALLOWED problem whose detail matches `detail`; answers the detail. */
export function assertImageRefused(res: LightMyRequestResponse, detail: RegExp, label = ''): string {
  assert.equal(res.statusCode, 400, `${label}: ${res.body}`);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  const body = json(res);
  assert.equal(body.code, 'IMAGE_NOT_ALLOWED', label);
  assert.match(body.detail, detail, label);
  return body.detail as string;
}
