/**
 * `runtime: fleet` (docs/fleet.md): instances are containers on the hosts whose `gantry agent`
 * joined; their hosts come and go while the server runs. The module puts the runtime together with
 * what feeds it: the fleet service's events (fleet-wiring.ts, which is also its host feed), the
 * streams agents dial back on, and, with several replicas, the journal they share.
 */
import type { RuntimeModule } from '../runtime/runtime-module.js';
import { FleetSchema } from './config.js';
import type { FleetRuntime } from './fleet-runtime.js';
import type { FleetWiring as Wiring } from './fleet-wiring.js';

export const fleetRuntime: RuntimeModule = {
  kind: 'fleet',
  capabilities: {
    liveHosts: true,
    gpuPinningByUuid: true,
    entrypointOverride: true,
    httpThroughAgent: true,
    suspendResume: true,
    imagePrePull: true,
    hostFirewall: true,
  },
  hostSource: 'joined',
  configSection: { path: 'fleet', schema: FleetSchema },
  imagesAreCommands: false,
  // The agents run the Docker runtime: the same defences, and the same opt-in for workers on the host's network.
  isolation: (config) => ({
    ownNetworks: true,
    hardening: true,
    acceptSharedHost: false,
    acceptHostNetwork: config.runtime.docker.allowMultipleAccountsOnHostNetwork,
  }),
  async create({ config, clock, logger, db, relay, agents, usage }) {
    // Loaded only by a server that runs the fleet (the CLI reads this module for its declarations).
    const [
      { FleetJournal, FLEET_JOURNAL_TOPIC },
      { FleetRuntime: FleetRuntimeClass },
      { FleetStreams },
      { FleetTunnels },
      wiringModule,
      { OrphanContainers },
    ] = await Promise.all([
      import('./fleet-journal.js'),
      import('./fleet-runtime.js'),
      import('./fleet-streams.js'),
      import('./fleet-tunnels.js'),
      import('./fleet-wiring.js'),
      import('./orphan-containers.js'),
    ]);
    const { FleetWiring, recordPlacements } = wiringModule;
    const fleetLogger = logger.child({ component: 'fleet' });
    const streams = new FleetStreams({
      enqueue: (hostId, op) => agents.enqueue(hostId, op),
      authenticate: (credential) => agents.authenticate(credential),
      logger: fleetLogger,
    });
    agents.on('acks', ({ acks }) => streams.acked(acks));
    // Several replicas: what each learns of the fleet goes to the others through the journal.
    const journal = relay
      ? new FleetJournal({
          db,
          origin: relay.origin,
          clock,
          logger: fleetLogger,
          publish: () => relay.publish(FLEET_JOURNAL_TOPIC, '', 1),
        })
      : null;
    const placements = recordPlacements(db);
    const runtime: FleetRuntime = new FleetRuntimeClass({
      enqueue: (hostId, op) => agents.enqueue(hostId, op),
      placements,
      hosts: () => wiring.hosts.current(),
      // an image's readiness probe (config `images`, a map without a prototype) goes with its start to the agent
      healthOf: (image) => config.images[image]?.health,
      cost: usage,
      clock,
      logger: logger.child({ component: 'runtime' }),
      config: { lostGraceMs: config.agents.lostGraceMs },
    });
    runtime.useStreams(streams);
    // The pod HTTP proxy's connections: streams of one tunnel per host, dialed back like a stream.
    const tunnels = new FleetTunnels({
      dialBack: (hostId, signal, limits) => streams.tunnel(hostId, signal, limits),
      logger: fleetLogger,
      config: config.agents.tunnels,
    });
    runtime.useTunnels(tunnels);
    if (journal) runtime.useJournal(journal);
    const wiring: Wiring = new FleetWiring({
      fleet: agents,
      runtime,
      placements,
      catalog: config.catalog,
      clock,
      logger: fleetLogger,
      config: config.agents,
      journal,
      orphans: new OrphanContainers({
        enqueue: (hostId, op) => agents.enqueue(hostId, op),
        clock,
        logger: fleetLogger,
        graceMs: config.runtime.orphanGraceMs,
      }),
    });
    return { runtime, hosts: wiring.hosts, fleetWiring: wiring, fleetStreams: streams, fleetTunnels: tunnels };
  },
};
