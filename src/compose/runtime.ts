import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Clock } from '../domain/clock.js';
import type { EntrypointSupport } from '../domain/start-command.js';
import type { FleetService } from '../fleet/fleet-service.js';
import { LEASE_NAMES } from '../store/leases.js';
import { RegistryGuard } from '../runtime/registry-guard.js';
import { configuredRuntime, prepareRuntime, type PreparedRuntime } from '../runtime/registry.js';
import { fixedHosts } from '../runtime/host-feed.js';
import type { BuiltRuntime, RuntimeFactoryDeps, RuntimeModule } from '../runtime/runtime-module.js';
import type { ServiceOverrides } from './overrides.js';
import type { Storage } from './storage.js';

/** The runtime the config names, checked before anything opens (or the one the overrides give). */
export interface RuntimeArea {
  module: RuntimeModule<unknown>;
  /** null when the overrides give the runtime */
  prepared: PreparedRuntime | null;
}

/**
 * Before the database opens: the configured runtime's checks that may refuse the start (an engine
 * that does not answer leaves nothing open).
 */
export async function prepareRuntimeArea(
  config: Config,
  overrides: ServiceOverrides,
  { logger }: { logger: Logger },
): Promise<RuntimeArea> {
  const module = configuredRuntime(config);
  if (overrides.runtime && !overrides.hosts && module.hostSource === 'discovered')
    throw new Error(
      `createServices: a runtime given for runtime ${module.kind} needs its hosts (overrides.hosts): the config declares none`,
    );
  const prepared = overrides.runtime
    ? null
    : await prepareRuntime(config, {
        logger,
        module,
        ...(overrides.runtimeDefences ? { defences: overrides.runtimeDefences } : {}),
      });
  return { module, prepared };
}

/**
 * The runtime, built by its module (runtime/registry.ts) over what the platform gives every
 * runtime. The pods' usage calls reach the pod controller once the server runs; only the replica
 * driving the pods writes usage.
 */
export async function buildRuntime(
  config: Config,
  overrides: ServiceOverrides,
  area: RuntimeArea,
  parts: {
    storage: Storage;
    fleet: FleetService;
    clock: Clock;
    logger: Logger;
    usage: RuntimeFactoryDeps['usage'];
  },
): Promise<BuiltRuntime> {
  const { storage, fleet, clock, logger, usage } = parts;
  if (!area.prepared) return { runtime: overrides.runtime!, hosts: fixedHosts(overrides.hosts ?? config.fleet) };
  const podsLease = storage.leases.lease(LEASE_NAMES.pods);
  try {
    return await area.prepared.create({
      config,
      clock,
      logger,
      db: storage.db,
      relay: storage.relay,
      agents: fleet,
      usage: {
        pause: async (hostId, at) => (podsLease.isHeld() ? usage.pause(hostId, at) : undefined),
        resume: async (podIds, at) => (podsLease.isHeld() ? usage.resume(podIds, at) : undefined),
      },
    });
  } catch (err) {
    if (!overrides.db) await storage.db.close();
    throw err;
  }
}

/** Whether the runtime replaces an image's entrypoint (its module's capability): the pods and templates services ask. */
export const entrypointsOf = (area: RuntimeArea): EntrypointSupport => ({
  runtime: area.module.kind,
  entrypointOverride: area.module.capabilities.entrypointOverride,
});

/** Only a runtime that pulls images is held to the registry policy (the process runtime maps them through `images`). */
export const registryGuardFor = (
  area: RuntimeArea,
  config: Config,
  overrides: ServiceOverrides,
): RegistryGuard | null =>
  area.module.capabilities.imagePrePull
    ? new RegistryGuard({
        policy: config.runtime.docker.registries,
        ...(overrides.registryResolver ? { resolve: overrides.registryResolver } : {}),
      })
    : null;
