/** The `runtime` section of the config: cross-field checks over what runtime/runtime-config.ts decoded. */
import { isIP } from 'node:net';
import type { Catalog } from './domain/catalog.js';
import { parseRegistryPattern } from './domain/registry-policy.js';
import { fail } from './config-values.js';
import { defaultNamespace } from './runtime/default-namespace.js';
import { runtimeModule } from './runtime/registry.js';
import type { RuntimeConfig, RuntimeSection } from './runtime/runtime-config.js';

export interface RuntimeContext {
  catalog: Catalog;
  databaseUrl: string | null;
  databaseSchema: string;
  dataDir: string;
  /** Config paths whose value came from an environment variable, and its name (refusals name it). */
  fromEnv: ReadonlyMap<string, string>;
}

/** The decoded `runtime` section, with the checks that need the catalog, the store or other keys. */
export function resolveRuntime(section: RuntimeSection, ctx: RuntimeContext): RuntimeConfig {
  const { docker } = section;
  const source = (path: string): string => ctx.fromEnv.get(path) ?? path;
  // Checked only when used: a DOCKER_HOST the process runtime never reads must not stop it.
  runtimeModule(section.kind).checkConfig?.(section, source);
  const namespace = docker.namespace ?? defaultNamespace(ctx.databaseUrl, ctx.databaseSchema, ctx.dataDir);
  const dataCenterId = docker.dataCenterId;
  if (dataCenterId !== null && !ctx.catalog.dataCenters.some((d) => d.id === dataCenterId))
    fail(`runtime.docker.dataCenterId "${dataCenterId}" is not in the catalog`);
  if (isIP(docker.bindIp) === 0) fail(`runtime.docker.bindIp "${docker.bindIp}" must be an IP address`);
  const unknownFlavor = docker.cpuFlavors?.find((f) => !ctx.catalog.cpuFlavors.some((c) => c.id === f));
  if (unknownFlavor !== undefined)
    fail(`runtime.docker.cpuFlavors names "${unknownFlavor}", which is not in the catalog`);
  const [first, last] = docker.portRange;
  if (first > last) fail('runtime.docker.portRange must be [first, last]: two ports from 1 to 65535, first <= last');
  const allowSetting = source('runtime.docker.registries.allow');
  for (const entry of docker.registries.allow) {
    const pattern = parseRegistryPattern(entry);
    if (typeof pattern === 'string') fail(`${allowSetting}: ${pattern}`);
  }
  if (docker.registries.only && docker.registries.allow.length === 0)
    fail(`runtime.docker.registries.only needs registries in ${allowSetting}: with none, no image could be pulled`);
  return { ...section, docker: { ...docker, namespace, portRange: [first, last] } };
}
