/**
 * No container runs unlimited, on a real engine: its vCPUs and memory are limits (RUNPOD_CPU_COUNT
 * says its vCPUs inside), `/dev/shm` is half its memory, and its open files are bounded. The disk
 * sampler, which stops a container past a disk its storage driver cannot cap, is played as a
 * tenant-matrix row (test/tenant-matrix-allotment.test.ts).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { dockerEngine, makeDockerRuntime, noEngine, type RuntimeFixture } from '../../../test/support/docker.js';
import { eventually } from '../../../test/support/eventually.js';
import { instanceSpec } from '../runtime-contract.js';
import type { DockerRuntimeOptions } from './docker-runtime-options.js';
import type { DockerEngine } from '../../../test/support/docker.js';

const engine = await dockerEngine();
after(() => engine?.client.close());

const GiB = 1024 ** 3;

/** Node code printing, as one JSON line, what the container sees of its limits, then idling. */
const REPORT_LIMITS = [
  "const fs = require('fs');",
  "const files = /Max open files\\s+(\\d+)\\s+(\\d+)/.exec(fs.readFileSync('/proc/self/limits', 'utf8'));",
  "const shm = fs.statfsSync('/dev/shm');",
  'console.log(JSON.stringify({ cpus: process.env.RUNPOD_CPU_COUNT, nofile: [Number(files[1]), Number(files[2])], shm: shm.blocks * shm.bsize }));',
  'setInterval(() => {}, 1 << 30);',
].join(' ');

if (!engine) {
  test('container limits on the Docker runtime', { skip: noEngine() }, () => {});
} else {
  const e: DockerEngine = engine;
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
  /** Starts a node instance reporting its limits; answers its container's HostConfig and what it saw. */
  const reported = async (t: RuntimeFixture, vcpus: number, memoryGb: number) => {
    const spec = instanceSpec({
      image: e.images.node,
      args: `-e "${REPORT_LIMITS}"`,
      vcpus,
      memoryGb,
      platformEnv: { RUNPOD_CPU_COUNT: String(vcpus) },
    });
    await t.runtime.start(spec);
    const name = `gantry-${t.namespace}-${spec.id}`;
    const seen = await eventually(`instance ${spec.id} reports its limits`, async () => {
      const line = (await e.client.containerLogs(name)).split('\n').find((l) => l.startsWith('{'));
      return line ? (JSON.parse(line) as { cpus: string; nofile: [number, number]; shm: number }) : null;
    });
    const host = (await e.client.inspectContainer(name)) as unknown as {
      HostConfig: { NanoCpus: number; Memory: number; ShmSize: number; Ulimits: unknown[] | null };
    };
    return { host: host.HostConfig, seen };
  };

  describe('container limits on the Docker runtime', () => {
    test('the vCPUs and memory are limits, RUNPOD_CPU_COUNT says the vCPUs inside, /dev/shm is half the memory, and open files are bounded', () =>
      withRuntime(
        async (t) => {
          const { host, seen } = await reported(t, 1, 2);
          assert.equal(host.NanoCpus, 1e9);
          assert.equal(host.Memory, 2 * GiB);
          assert.equal(host.ShmSize, GiB);
          assert.deepEqual(host.Ulimits, [{ Name: 'nofile', Soft: 4096, Hard: 4096 }]);
          assert.equal(seen.cpus, '1');
          assert.equal(seen.shm, GiB, '/dev/shm inside is the size asked');
          assert.deepEqual(seen.nofile, [4096, 4096], 'the open-files limit inside');
        },
        // below any engine's own limit (the shared test engine's is 20,000), so the engine applies it
        { openFilesLimit: 4096 },
      ));

    test("an engine whose own open-files limit is lower than the bound asked starts the container with the engine's limit", () =>
      withRuntime(async (t) => {
        const { host, seen } = await reported(t, 1, 1);
        if (host.Ulimits && host.Ulimits.length > 0) {
          // this engine can raise a container's limit: the default bound holds
          assert.deepEqual(host.Ulimits, [{ Name: 'nofile', Soft: 65_536, Hard: 65_536 }]);
          assert.deepEqual(seen.nofile, [65_536, 65_536]);
        } else {
          assert.ok(seen.nofile[1] < 65_536, `the engine's own limit, lower than the bound: ${seen.nofile.join('/')}`);
        }
        assert.equal(seen.shm, GiB / 2);
      }));
  });
}
