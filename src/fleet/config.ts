/**
 * The fleet's section of the config, `fleet`: the timings of the agents of joined hosts
 * (`runtime: fleet`, docs/fleet.md), handed to the services as `AgentsConfig` (agents-config.ts),
 * and the hosts the process runtime declares (`fleet.hosts`, read by config.ts's own parser).
 */
import { Type } from '@sinclair/typebox';
import { amount, atLeast } from '../config-fields.js';
import { MAX_AGENT_POLL_WAIT_MS } from './protocol.js';

/** `fleet` as a mapping (a list is the short form of `{ hosts: […] }`). */
export const FleetSchema = Type.Object(
  {
    heartbeatMs: atLeast(100, 10_000, 'How often an agent reports; handed to it when it joins. At least 100.'),
    heartbeatTimeoutMs: amount(
      30_000,
      'A host whose last report is older than this is unavailable (placement skips it). Longer than `heartbeatMs`.',
    ),
    pollWaitMs: amount(25_000, "How long an agent's operations long-poll is held; handed to it when it joins.", {
      maximum: MAX_AGENT_POLL_WAIT_MS,
      bounds: `at most ${MAX_AGENT_POLL_WAIT_MS} ms`,
    }),
    lostGraceMs: amount(300_000, "How long a host may stay unreachable before its pods' cost stops accruing."),
    joinTokenTtlMs: amount(
      3_600_000,
      'How long a join token is good for when `gantry hosts token create` is given no `--ttl`.',
      { minimum: 1000, bounds: 'at least 1000 ms' },
    ),
    hosts: Type.Optional(
      Type.Unknown({
        description:
          "The process runtime's hosts: a list of `{ id, dataCenterId, cloud, gpuTypeId, gpuCount, cudaVersion, cpuFlavors, vcpus, memoryGb, diskGb, portRange, publicIp }`.",
        defaultText: 'the demo fleet',
      }),
    ),
  },
  {
    description:
      "The agents of joined hosts (`gantry agent`, docs/fleet.md), and the process runtime's hosts. A list is the short form of `{ hosts: [...] }`.",
  },
);
