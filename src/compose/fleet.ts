import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Clock } from '../domain/clock.js';
import { FleetService } from '../fleet/fleet-service.js';
import type { Storage } from './storage.js';

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
