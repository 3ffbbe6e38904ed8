import type { Logger } from 'pino';
import type { HealthProbe } from '../domain/image-spec.js';
import type { Clock } from '../domain/clock.js';
import type { FleetCost } from './lost-host-cost.js';
import type { NewOperation, Operation } from './protocol.js';
import type { PlacedInstance } from './report-screen.js';

export interface FleetPlacements {
  /** Of `ids`, those the control plane placed on some host; ids it never placed are absent. */
  placed(ids: readonly string[]): Promise<ReadonlyMap<string, PlacedInstance>>;
  /** The instances meant to run (pods meant to run, launched workers not dead), for `attach()`. @default none */
  expected?(): Promise<Array<PlacedInstance & { id: string }>>;
}

/**
 * What the fleet runtime is given (the composition root wires these; the fleet service and the agent protocol
 * live elsewhere):
 * - `enqueue(hostId, op)`: the host's operation queue (stored, delivered by the agent's long poll,
 *   acknowledged once applied). Operations for one instance are enqueued one after the other, in
 *   the order of the calls here.
 * - `placements`: the control plane's records, to tell which host an instance id was placed on
 *   (pods by id → host, launched workers → their allocation's host; TERMINATED pods and dead
 *   workers count, their container may still be there) and, at server start, which instances are
 *   meant to run where.
 * - `cost` (optional, set with `useCost()` once the pod controller exists): pauses and resumes
 *   the usage intervals of a lost host's pods.
 * - `hosts` (optional): the fleet's hosts, for deleting a network volume on each host of its
 *   data center.
 * - `healthOf` (optional): an image's readiness probe, sent with each start (agents hold no images
 *   map), so an agent reports `running` only once it passes, as `runtime: docker` would.
 */
export interface FleetRuntimeDeps {
  enqueue(hostId: string, operation: NewOperation): Promise<Operation>;
  placements: FleetPlacements;
  /** The fleet's hosts (the inventory's), for `removeVolume`. @default only the hosts known to have mounted the volume */
  hosts?: () => Iterable<{ id: string; dataCenterId: string }>;
  cost?: FleetCost;
  /**
   * The readiness probe of `image`, sent with its starts (the `start` operation's `health`): agents
   * hold no images map. The composition root passes the config's: `(image) => config.images[image]?.health`
   * (parseImages() builds that map without a prototype: an image name is tenant input).
   * @default none: instances are `running` once their container starts
   */
  healthOf?(image: string): HealthProbe | undefined;
  clock: Clock;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  config?: {
    /** How long a host may be unreachable before its pods' cost stops accruing. @default 300000 */
    lostGraceMs?: number;
    /** How often unreachable hosts are checked against the grace. @default 10000 (at most the grace) */
    sweepIntervalMs?: number;
  };
}
