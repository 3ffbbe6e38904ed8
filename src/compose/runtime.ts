import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Clock } from '../domain/clock.js';
import type { Host } from '../domain/catalog.js';
import type { Db } from '../store/database.js';
import type { Inventory } from '../inventory/inventory.js';
import type { FleetService } from '../fleet/fleet-service.js';
import { FleetRuntime } from '../fleet/fleet-runtime.js';
import { recordPlacements } from '../fleet/fleet-wiring.js';
import { createRuntime } from '../runtime/create-runtime.js';
import { RegistryGuard } from '../runtime/registry-guard.js';
import type { Runtime } from '../runtime/runtime.js';
import type { ServiceOverrides } from './overrides.js';

export interface RuntimeArea {
  runtime: Runtime;
  /** The hosts placement starts with. */
  hosts: Host[];
  /** runtime fleet: the runtime, to be wired to the fleet (compose/fleet.ts); null otherwise. */
  fleetRuntime: FleetRuntime | null;
  /** runtime fleet: hands the runtime the fleet service, database and inventory built after it. */
  bindFleet(parts: { fleet: FleetService; db: Db; inventory: Inventory }): void;
}

/** The runtime area: the runtime the config names (or the one given), built before the database opens. */
export async function assembleRuntime(
  config: Config,
  overrides: ServiceOverrides,
  { clock, logger }: { clock: Clock; logger: Logger },
): Promise<RuntimeArea> {
  // Before the database opens: a runtime that cannot start (its engine unreachable) leaves nothing open.
  if (overrides.runtime && !overrides.hosts && config.runtime.kind === 'docker')
    throw new Error(
      'createServices: a runtime given for runtime docker needs its hosts (overrides.hosts): the config declares none',
    );
  // runtime fleet: instances run on the joined hosts' agents; its operations go to the fleet
  // service's queues and the records say where each instance was placed (both made below).
  let fleetOps: FleetService | null = null;
  let fleetDb: Db | null = null;
  let fleetInventory: Inventory | null = null;
  const fleetRuntime: FleetRuntime | null =
    !overrides.runtime && config.runtime.kind === 'fleet'
      ? new FleetRuntime({
          enqueue: (hostId, op) => fleetOps!.enqueue(hostId, op),
          placements: {
            placed: (ids) => recordPlacements(fleetDb!).placed(ids),
            expected: () => recordPlacements(fleetDb!).expected(),
          },
          hosts: () => fleetInventory?.hosts() ?? [],
          // an image's readiness probe (config `images`, a map without a prototype) goes with its start to the agent
          healthOf: (image) => config.images[image]?.health,
          clock,
          logger: logger.child({ component: 'runtime' }),
          config: { lostGraceMs: config.agents.lostGraceMs },
        })
      : null;
  const { runtime, hosts }: { runtime: Runtime; hosts: Host[] } = overrides.runtime
    ? { runtime: overrides.runtime, hosts: overrides.hosts ?? config.fleet }
    : fleetRuntime
      ? { runtime: fleetRuntime, hosts: [] }
      : await createRuntime(config, { clock, logger: logger.child({ component: 'runtime' }) });
  return {
    runtime,
    hosts,
    fleetRuntime,
    bindFleet({ fleet, db, inventory }) {
      fleetOps = fleet;
      fleetDb = db;
      fleetInventory = inventory;
    },
  };
}

/** Only the Docker runtime pulls images: the process runtime maps them through `images` and never does. */
export const registryGuardFor = (config: Config, overrides: ServiceOverrides): RegistryGuard | null =>
  config.runtime.kind !== 'process'
    ? new RegistryGuard({
        policy: config.runtime.docker.registries,
        ...(overrides.registryResolver ? { resolve: overrides.registryResolver } : {}),
      })
    : null;
