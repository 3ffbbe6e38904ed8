/**
 * The fleet's section of the config, `fleet`: the timings of the agents of joined hosts
 * (`runtime: fleet`, docs/fleet.md), handed to the services as `AgentsConfig` (agents-config.ts),
 * and the hosts the process runtime declares (`fleet.hosts`, read by config.ts's own parser).
 */
import { Type } from '@sinclair/typebox';
import { amount, atLeast, count } from '../config-fields.js';
import { MAX_AGENT_POLL_WAIT_MS } from './protocol.js';

/**
 * `fleet.tunnels`: the bounds of the hosts' tunnels (docs/fleet.md "The tunnel"). The agent's own
 * bounds (tunnels it holds, dials at once, its streams' windows) are handed to it with each tunnel
 * the control plane asks for (src/agent/agent-tunnels.ts).
 */
const TunnelsSchema = Type.Object(
  {
    maxStreams: count(
      1,
      8192,
      'Streams (proxied connections) one tunnel carries at once, at either end; an open past it is refused.',
      {
        maximum: 65_536,
        bounds: 'at most 65536',
      },
    ),
    maxTunnelsPerAgent: count(
      1,
      16,
      'Tunnels an agent holds at once (each replica holds one per host it reaches); past it a new one is refused.',
      {
        maximum: 1024,
        bounds: 'at most 1024',
      },
    ),
    maxDialing: count(
      1,
      2048,
      "Connections an agent dials to its containers' ports at once per tunnel; past it an open is refused.",
      {
        maximum: 65_536,
        bounds: 'at most 65536',
      },
    ),
    idleMs: count(
      1000,
      300_000,
      'A tunnel that carried no stream for this long is closed (the next connection asks for one again).',
    ),
    maxWindowBytes: count(
      256 * 1024,
      4 * 1024 * 1024,
      "The most a stream's credit window grows to (from 256 KiB, doubling while its reader keeps up and its sender waits for credit): what one stream carries per round trip, and what a stalled reader may hold.",
      { maximum: 16 * 1024 * 1024, bounds: '256 KiB to 16 MiB' },
    ),
  },
  {
    description: "The hosts' tunnels: the pod HTTP proxy's connections to the ports of a host's pods (docs/fleet.md).",
    default: {},
  },
);

/**
 * `fleet.downloads`: how many of the agent's public downloads (`/agent/v1/download/…`, about 95 MiB
 * each) are served at once, per client address and in all (src/fleet/download-gate.ts).
 */
const DownloadsSchema = Type.Object(
  {
    maxPerClient: count(
      1,
      2,
      'Downloads of the agent executable one client address (an IPv6 one by its /64) receives at once; past it 429 with Retry-After.',
      {
        maximum: 1024,
        bounds: 'at most 1024',
      },
    ),
    maxConcurrent: count(
      1,
      16,
      'Downloads of the agent executable served at once from all clients; past it 429 with Retry-After.',
      {
        maximum: 65_536,
        bounds: 'at most 65536',
      },
    ),
  },
  {
    description:
      "The agent's public downloads (the one-line join, docs/deploy.md): a bound on what anyone can make this server send.",
    default: {},
  },
);

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
    tunnels: TunnelsSchema,
    downloads: DownloadsSchema,
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
