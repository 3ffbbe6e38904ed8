/**
 * Gantry over the Docker runtime on a real engine, with one host of the test's own (under a
 * namespace of the test's): the app on `runtime.kind: docker` and that host, torn down with the
 * runtime's containers and networks whatever the body does. (Without an engine: docker-app.ts.)
 */
import type { Host } from '../../src/domain/catalog.js';
import type { DockerRuntimeOptions } from '../../src/runtime/docker/docker-runtime-options.js';
import { makeDockerRuntime, type DockerEngine, type RuntimeFixture } from './docker.js';
import { createTestApp, type TestApp } from './harness.js';

export async function withDockerApp(
  e: DockerEngine,
  host: Host,
  body: (t: TestApp, fixture: RuntimeFixture) => Promise<void>,
  overrides: Partial<DockerRuntimeOptions> = {},
): Promise<void> {
  const fixture = makeDockerRuntime(e, { host, ...overrides });
  const t = await createTestApp({
    runtime: fixture.runtime,
    hosts: [host],
    registryResolver: async () => ['93.184.216.34'],
    file: { runtime: { kind: 'docker' } },
  }).catch(async (err: unknown) => {
    await fixture.cleanup();
    throw err;
  });
  try {
    await body(t, fixture);
  } finally {
    await t.close();
    await fixture.cleanup();
  }
}
