/**
 * Every runtime Gantry can run on, by kind: adding one is a folder with its `module.ts` and one line
 * here (docs/runtimes.md "Adding a runtime"). Nothing else names a kind: what depends on the
 * runtime asks its module (runtime-module.ts), found here by the config's `runtime.kind`.
 */
import { fleetRuntime } from '../fleet/module.js';
import { dockerRuntime } from './docker/module.js';
import { processRuntime } from './process/module.js';
import type {
  BuiltRuntime,
  RuntimeFactoryDeps,
  RuntimeModule,
  RuntimeModuleConfig,
  RuntimePrepareDeps,
} from './runtime-module.js';

/** The runtimes of every build, in the order the docs list them. */
const RUNTIMES: readonly RuntimeModule<unknown>[] = [processRuntime, dockerRuntime, fleetRuntime];

/** Runtimes registered while the process runs: only tests do (test/support/runtimes.ts, the fake). */
const registered = new Map<string, RuntimeModule<unknown>>();

/** Adds a runtime for this process only (the test-only fake). A kind already listed is refused. */
export function registerRuntime(module: RuntimeModule<unknown>): void {
  if (RUNTIMES.some((m) => m.kind === module.kind)) throw new Error(`runtime "${module.kind}" is built in`);
  registered.set(module.kind, module);
}

/** Every runtime known, built in first. */
export function runtimeModules(): RuntimeModule<unknown>[] {
  return [...RUNTIMES, ...registered.values()];
}

/** The runtime of that kind; throws for a kind no module declares (the config schema lists the known ones). */
export function runtimeModule(kind: string): RuntimeModule<unknown> {
  const module = runtimeModules().find((m) => m.kind === kind);
  if (!module)
    throw new Error(
      `no runtime of kind "${kind}" (known: ${runtimeModules()
        .map((m) => m.kind)
        .join(', ')})`,
    );
  return module;
}

/** The runtime the config names. */
export const configuredRuntime = (config: Pick<RuntimeModuleConfig, 'runtime'>): RuntimeModule<unknown> =>
  runtimeModule(config.runtime.kind);

/** A runtime whose checks passed before anything opened, ready to be built once the platform exists. */
export interface PreparedRuntime {
  module: RuntimeModule<unknown>;
  create(deps: Omit<RuntimeFactoryDeps, 'prepared'>): Promise<BuiltRuntime>;
}

/**
 * Runs the checks of the runtime the config names that may refuse the start (before the database
 * opens: an engine that does not answer leaves nothing behind), and answers how to build it.
 */
export async function prepareRuntime(
  config: RuntimeModuleConfig,
  deps: Omit<RuntimePrepareDeps, 'config'> & { module?: RuntimeModule<unknown> },
): Promise<PreparedRuntime> {
  const module = deps.module ?? configuredRuntime(config);
  const prepared = await module.prepare?.({ ...deps, config });
  return {
    module,
    create: (platform) => module.create({ ...platform, prepared }),
  };
}
