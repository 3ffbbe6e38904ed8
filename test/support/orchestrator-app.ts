/**
 * A listening Gantry (runtime docker over the in-memory runtime, injected clock, SQLite or PostgreSQL) with the fleet the
 * orchestrator suites (test/graphql-dstack.test.ts, test/graphql-skypilot.test.ts) place on, and
 * the two ways their clients call it: a GraphQL document (the exact text the client sends, from
 * test/fixtures/graphql-clients/) and a REST request, both over real HTTP.
 */
import type { AddressInfo } from 'node:net';
import type { Host } from '../../src/domain/catalog.js';
import { FakeClock } from '../../src/domain/clock.js';
import type { ResolveAddresses } from '../../src/runtime/registry-guard.js';
import { FakeRuntime } from './fake-runtime/fake-runtime.js';
import { createTestApp, type DialectName, type TestApp } from './harness.js';

export const RTX_4090 = 'NVIDIA GeForce RTX 4090';
export const A40 = 'NVIDIA A40';

const host = (h: Partial<Host> & Pick<Host, 'id' | 'dataCenterId' | 'portRange' | 'publicIp'>): Host => ({
  cloud: 'SECURE',
  cudaVersion: null,
  gpuTypeId: null,
  gpuCount: 0,
  cpuFlavors: [],
  vcpus: 64,
  memoryGb: 512,
  diskGb: 4000,
  gpuMode: 'env-only',
  ...h,
});

/**
 * US-TX-3: two secure hosts of eight RTX 4090s on CUDA 12.8 (dstack asks for 12.8 at least) and a
 * CPU host; A40s for the availability questions: four in US-TX-3 (secure), one in EU-RO-1 (secure),
 * four in US-CA-2 (community).
 */
const HOSTS: Host[] = [
  host({
    id: 'tx-4090-a',
    dataCenterId: 'US-TX-3',
    gpuTypeId: RTX_4090,
    gpuCount: 8,
    cudaVersion: '12.8',
    portRange: [20000, 20999],
    publicIp: '203.0.113.10',
  }),
  host({
    id: 'tx-4090-b',
    dataCenterId: 'US-TX-3',
    gpuTypeId: RTX_4090,
    gpuCount: 8,
    cudaVersion: '12.8',
    portRange: [21000, 21999],
    publicIp: '203.0.113.11',
  }),
  host({
    id: 'tx-cpu',
    dataCenterId: 'US-TX-3',
    cpuFlavors: ['cpu3c', 'cpu3g'],
    memoryGb: 256,
    portRange: [22000, 22999],
    publicIp: '203.0.113.12',
  }),
  host({
    id: 'tx-a40',
    dataCenterId: 'US-TX-3',
    gpuTypeId: A40,
    gpuCount: 4,
    cudaVersion: '12.4',
    portRange: [23000, 23999],
    publicIp: '203.0.113.13',
  }),
  host({
    id: 'ro-a40',
    dataCenterId: 'EU-RO-1',
    gpuTypeId: A40,
    gpuCount: 1,
    cudaVersion: '12.4',
    vcpus: 16,
    memoryGb: 128,
    portRange: [24000, 24999],
    publicIp: '203.0.113.14',
  }),
  host({
    id: 'ca-a40',
    dataCenterId: 'US-CA-2',
    cloud: 'COMMUNITY',
    gpuTypeId: A40,
    gpuCount: 4,
    cudaVersion: '12.4',
    portRange: [25000, 25999],
    publicIp: '203.0.113.15',
  }),
];

/** Registry host names as a DNS would answer them here (public addresses); no DNS traffic. */
const registryDns: ResolveAddresses = async (name) => {
  if (name === 'registry.gantry.test' || name.endsWith('docker.io')) return ['93.184.216.34'];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
};

interface GraphqlAnswer {
  data?: any;
  errors?: Array<{ message: string; extensions?: { code?: string } }>;
}

export interface OrchestratorApp {
  t: TestApp;
  clock: FakeClock;
  runtime: FakeRuntime;
  /** Sends a GraphQL document as the client does (POST /graphql, bearer key; null: none, as gpuhunt sends). */
  gql(key: string | null, query: string, variables?: Record<string, unknown>): Promise<GraphqlAnswer>;
  /** `json: 'always'`: `Content-Type: application/json` even without a body, as SkyPilot's REST calls send. */
  rest(
    key: string,
    method: string,
    path: string,
    body?: unknown,
    options?: { json?: 'always' },
  ): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

export interface OrchestratorAppOptions {
  /** @default the US-TX-3, EU-RO-1 and US-CA-2 hosts above */
  hosts?: Host[];
  /** @default registry.gantry.test and docker.io at a public address, every other name unknown */
  registryResolver?: ResolveAddresses;
}

export async function startOrchestratorApp(
  dialect: DialectName,
  options: OrchestratorAppOptions = {},
): Promise<OrchestratorApp> {
  const clock = new FakeClock(Date.parse('2026-07-01T10:00:00Z'));
  const runtime = new FakeRuntime();
  const t = await createTestApp({
    dialect,
    clock,
    runtime,
    // runtime docker (it replaces an image's entrypoint, as dstack's and SkyPilot's start commands
    // need) over the in-memory runtime, on these hosts
    hosts: options.hosts ?? HOSTS,
    registryResolver: options.registryResolver ?? registryDns,
    file: {
      runtime: { kind: 'docker' },
      rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 },
      quotas: { pods: 10_000, gpus: 10_000 },
    },
  });
  // the loops' leases (on PostgreSQL, held only once taken): the pod-deadline sweep runs under `pods`
  await t.services.leases.start();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  return {
    t,
    clock,
    runtime,
    async gql(key, query, variables) {
      const res = await fetch(`${base}/graphql`, {
        method: 'POST',
        headers: { ...(key === null ? {} : { authorization: `Bearer ${key}` }), 'content-type': 'application/json' },
        body: JSON.stringify(variables ? { query, variables } : { query }),
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`POST /graphql answered ${res.status}: ${text}`);
      return JSON.parse(text) as GraphqlAnswer;
    },
    async rest(key, method, path, body, options = {}) {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body !== undefined || options.json === 'always' ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    },
    async close() {
      await t.services.leases.close();
      await t.close();
    },
  };
}
