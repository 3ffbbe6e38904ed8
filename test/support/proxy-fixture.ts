/**
 * A whole Gantry server (process runtime) whose pods run test/fixtures/proxy-upstream.mjs, for the
 * pod HTTP proxy's tests (docs/proxy.md): the SSH fixture's server, tenants and pods, on host ports
 * of its own (a pod's process listens on its host port, beside other tests' servers).
 */
import { join } from 'node:path';
import type { Clock } from '../../src/domain/clock.js';
import { freePortRange } from './eventually.js';
import { startSshFixture, type FixtureFetch, type SshFixture, type SshPod, type SshTenant } from './ssh-fixture.js';

const PROXY_UPSTREAM = 'test/proxy-upstream';
const GPU = 'NVIDIA GeForce RTX 4090';

export interface ProxiedPod extends SshPod {
  httpProxy: Array<{ port: number; url: string; link?: string }>;
}

export interface ProxyFixture extends SshFixture {
  /** Creates a pod of the upstream image (`8000/http` unless `body` says otherwise) and waits until it runs (its health probe passed). */
  proxiedPod(owner: SshTenant, body?: Record<string, unknown>): Promise<ProxiedPod>;
}

export async function startProxyFixture(
  file: Record<string, unknown> = {},
  options: { clock?: Clock; fetch?: FixtureFetch } = {},
): Promise<ProxyFixture> {
  const f = await startSshFixture(
    {
      images: {
        [PROXY_UPSTREAM]: {
          command: [process.execPath, join(import.meta.dirname, '..', 'fixtures', 'proxy-upstream.mjs')],
          health: { type: 'http', port: 8000, path: '/health', intervalMs: 25, timeoutMs: 20_000 },
        },
      },
      fleet: [
        {
          id: 'proxy-host',
          dataCenterId: 'US-TX-3',
          gpuTypeId: GPU,
          gpuCount: 8,
          cudaVersion: '12.4',
          portRange: await freePortRange(20),
        },
      ],
      ...file,
    },
    options,
  );
  return {
    ...f,
    proxiedPod: async (owner, body = {}) =>
      (await f.runningPod(owner, {
        name: 'web',
        image: PROXY_UPSTREAM,
        startSsh: false,
        ports: ['8000/http', '9000/tcp'],
        ...body,
      })) as ProxiedPod,
  };
}
