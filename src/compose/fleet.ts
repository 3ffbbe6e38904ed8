import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Clock } from '../domain/clock.js';
import type { Inventory } from '../inventory/inventory.js';
import type { PodController } from '../pods/pod-controller.js';
import { LEASE_NAMES } from '../store/leases.js';
import { FleetService } from '../fleet/fleet-service.js';
import { FleetWiring, recordPlacements } from '../fleet/fleet-wiring.js';
import { FleetStreams } from '../fleet/fleet-streams.js';
import { FleetJournal, FLEET_JOURNAL_TOPIC } from '../fleet/fleet-journal.js';
import { OrphanContainers } from '../fleet/orphan-containers.js';
import type { Storage } from './storage.js';
import type { RuntimeArea } from './runtime.js';

/** Joined hosts and their agents' protocol: built with every runtime (`gantry hosts` works alike). */
export function assembleFleetService(
  config: Config,
  { stores, secrets, relay }: Storage,
  { clock, logger }: { clock: Clock; logger: Logger },
): FleetService {
  return new FleetService({
    // Read at each report: a server started on port 0 learns its job URL's port once it listens.
    jobUrl: () => config.server.publicJobUrl,
    hosts: stores.hosts,
    operations: stores.operations,
    clock,
    secrets,
    catalog: config.catalog,
    config: config.agents,
    relay,
    logger: logger.child({ component: 'fleet' }),
  });
}

export interface FleetArea {
  fleetWiring: FleetWiring | null;
  fleetStreams: FleetStreams | null;
}

/** runtime fleet: the fleet's events wired to the inventory and the runtime (nothing otherwise). */
export function wireFleet(
  config: Config,
  parts: {
    fleet: FleetService;
    runtimeArea: RuntimeArea;
    storage: Storage;
    inventory: Inventory;
    podController: PodController;
    clock: Clock;
    logger: Logger;
  },
): FleetArea {
  const { fleet, runtimeArea, storage, inventory, podController, clock, logger } = parts;
  const { fleetRuntime } = runtimeArea;
  const { db, leases, relay } = storage;
  let fleetWiring: FleetWiring | null = null;
  let fleetStreams: FleetStreams | null = null;
  if (fleetRuntime) {
    fleetStreams = new FleetStreams({
      enqueue: (hostId, op) => fleet.enqueue(hostId, op),
      authenticate: (credential) => fleet.authenticate(credential),
      logger: logger.child({ component: 'fleet' }),
    });
    fleetRuntime.useStreams(fleetStreams);
    const streams = fleetStreams;
    fleet.on('acks', ({ acks }) => streams.acked(acks));
    runtimeArea.bindFleet({ fleet, db, inventory });
    // Every replica's runtime sees a lost host alike; only the one driving the pods writes usage.
    const podsLease = leases.lease(LEASE_NAMES.pods);
    fleetRuntime.useCost({
      pause: async (hostId, at) => (podsLease.isHeld() ? podController.pauseUsage(hostId, at) : undefined),
      resume: async (podIds, at) => (podsLease.isHeld() ? podController.resumeUsage(podIds, at) : undefined),
    });
    // Several replicas: what each learns of the fleet goes to the others through the journal.
    const journal = relay
      ? new FleetJournal({
          db,
          origin: relay.origin,
          clock,
          logger: logger.child({ component: 'fleet' }),
          publish: () => relay.publish(FLEET_JOURNAL_TOPIC, '', 1),
        })
      : null;
    if (journal) fleetRuntime.useJournal(journal);
    fleetWiring = new FleetWiring({
      fleet,
      runtime: fleetRuntime,
      inventory,
      placements: recordPlacements(db),
      catalog: config.catalog,
      clock,
      logger: logger.child({ component: 'fleet' }),
      config: config.agents,
      journal,
      orphans: new OrphanContainers({
        enqueue: (hostId, op) => fleet.enqueue(hostId, op),
        clock,
        logger: logger.child({ component: 'fleet' }),
        graceMs: config.runtime.orphanGraceMs,
      }),
    });
  }
  return { fleetWiring, fleetStreams };
}
