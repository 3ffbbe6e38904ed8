// The runtime contract over FleetRuntime, end to end on real containers: its operations are
// applied by an in-process stand-in for the host's agent (test/support/loopback-agent.ts, a test
// seam) on a real DockerRuntime, whose changes come back as the agent's reports. What a
// restarted control plane adopts is what the agent reports in full when it reconnects.
import { after, test } from 'node:test';
import pino from 'pino';
import { systemClock } from '../domain/clock.js';
import { describeRuntime, type RuntimeUnderTest } from '../runtime/runtime-contract.js';
import { dockerEngine, makeDockerRuntime, noEngine } from '../../test/support/docker.js';
import { LoopbackAgent } from '../../test/support/loopback-agent.js';
import { HTTP_ENTRYPOINT } from '../../test/support/docker-images.js';
import { FleetRuntime, type PlacedInstance } from './fleet-runtime.js';
import type { NewOperation } from './protocol.js';

const engine = await dockerEngine();
after(() => engine?.client.close());

if (!engine) {
  test('the fleet runtime over a Docker host', { skip: noEngine() }, () => {});
} else {
  const e = engine;
  describeRuntime('fleet (a loopback agent on Docker)', async (): Promise<RuntimeUnderTest> => {
    const docker = makeDockerRuntime(e);
    // The agent attaches to its engine when it starts, before it reports.
    await docker.runtime.attach();
    // The contract's specs name host "local".
    const agent = new LoopbackAgent('local', docker.runtime);
    // The control plane's records of where each instance was placed (its pods' and workers' rows).
    const records = new Map<string, PlacedInstance>();
    const build = () =>
      new FleetRuntime({
        enqueue: (hostId: string, op: NewOperation) => {
          if (op.kind === 'start') records.set(op.instanceId, { hostId, owner: op.spec.owner });
          return agent.enqueue(hostId, op);
        },
        placements: {
          placed: async (ids) =>
            new Map(ids.flatMap((id) => (records.has(id) ? [[id, records.get(id)!] as const] : []))),
        },
        clock: systemClock,
        logger: pino({ level: process.env.GANTRY_TEST_LOG ?? 'silent' }),
      });
    const runtime = build();
    await agent.connect(runtime);
    const reopened: FleetRuntime[] = [];
    return {
      runtime,
      images: e.images,
      adoptsAfterClose: true,
      // the agent's Docker runtime runs the entrypoint the start operation's spec carries
      entrypointOverride: true,
      httpEntrypoint: HTTP_ENTRYPOINT,
      reopen: async () => {
        // A restarted control plane: the agent reconnects and reports in full.
        const again = build();
        reopened.push(again);
        await agent.connect(again);
        return again;
      },
      cleanup: async () => {
        for (const r of reopened) await r.close();
        await agent.disconnect();
        await docker.cleanup();
      },
    };
  });
}
