/**
 * Builds the runtime the config names (`runtime.kind`) and the hosts placement may use: the
 * process runtime with the config's fleet, or the Docker runtime with the one host discovered
 * from its engine.
 */
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Host } from '../domain/catalog.js';
import type { Clock } from '../domain/clock.js';
import type { Runtime } from './runtime.js';
import type { DockerRuntimeOptions } from './docker/docker-runtime-options.js';
import { ProcessRuntime } from './process/process-runtime.js';
import { discoverEngineHost } from './docker/discover-host.js';
import { EngineUnreachable } from './docker/engine-info.js';

/** A config `runtime.docker.firewall.allow` entry (`10.0.0.5`, `10.0.0.0/8`, `10.0.0.5:5432`), as the schema checked it. */
function allowedDestination(entry: string): { cidr: string; port: number | null } {
  const [address = '', port] = entry.split(':');
  return { cidr: address.includes('/') ? address : `${address}/32`, port: port === undefined ? null : Number(port) };
}

/** What `./docker/docker-runtime.js` exports. */
export interface DockerRuntimeModule {
  DockerRuntime: new (options: DockerRuntimeOptions) => Runtime;
}

/** A start the operator has to act on: the CLI prints the message as it stands. */
export class RuntimeStartRefused extends Error {
  override readonly name = 'RuntimeStartRefused';
}

export interface ConfiguredRuntime {
  runtime: Runtime;
  /** The hosts placement uses: the config's fleet, or the discovered host. */
  hosts: Host[];
}

export interface CreateRuntimeDeps {
  clock: Clock;
  logger: Logger;
  /** The environment nvidia-smi runs in (its PATH finds the command). @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Loads the Docker runtime's module. @default a dynamic import of ./docker/docker-runtime.js */
  loadDockerRuntime?: () => Promise<DockerRuntimeModule>;
  /** The Docker runtime's isolation defences (only the isolation tests take one away). @default all on */
  isolation?: DockerRuntimeOptions['isolation'];
}

/** Kept out of the static import graph: only a server that runs containers loads the Docker adapter. */
const DOCKER_RUNTIME_MODULE = './docker/docker-runtime.js';
const importDockerRuntime = (): Promise<DockerRuntimeModule> =>
  import(DOCKER_RUNTIME_MODULE) as Promise<DockerRuntimeModule>;

export async function createRuntime(config: Config, deps: CreateRuntimeDeps): Promise<ConfiguredRuntime> {
  const { clock, logger } = deps;
  if (config.runtime.kind === 'process') {
    const runtime = new ProcessRuntime({
      images: config.images,
      dataDir: config.dataDir,
      clock,
      logger,
      stopGraceMs: config.pods.stopGraceMs,
      orphanGraceMs: config.runtime.process.orphanGraceMs,
      statsIntervalMs: config.runtime.statsIntervalMs,
    });
    return { runtime, hosts: config.fleet };
  }
  const docker = config.runtime.docker;
  let host: Host;
  try {
    ({ host } = await discoverEngineHost(docker, config.catalog, deps.env ? { env: deps.env } : {}));
  } catch (err) {
    if (!(err instanceof EngineUnreachable)) throw err;
    throw new RuntimeStartRefused(
      `refusing to start with runtime docker: ${err.message}. Start the engine, point DOCKER_HOST (or runtime.docker.host) at it, or set GANTRY_RUNTIME=process to run instances as local processes`,
    );
  }
  for (const note of host.notes ?? []) logger.warn({ hostId: host.id }, note);
  let module: DockerRuntimeModule;
  try {
    module = await (deps.loadDockerRuntime ?? importDockerRuntime)();
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code !== 'ERR_MODULE_NOT_FOUND' || !e.message.includes('docker-runtime')) throw err;
    throw new RuntimeStartRefused(
      `refusing to start with runtime docker: this build of gantry has no Docker runtime (${e.message})`,
    );
  }
  const runtime = new module.DockerRuntime({
    dockerHost: docker.host,
    namespace: docker.namespace,
    host,
    bindIp: docker.bindIp,
    images: config.images,
    clock,
    logger,
    stopGraceMs: config.pods.stopGraceMs,
    registries: docker.registries,
    statsIntervalMs: config.runtime.statsIntervalMs,
    nvidiaSmi: docker.nvidiaSmi,
    ...(deps.env ? { nvidiaSmiEnv: deps.env } : {}),
    networks: docker.networks,
    ...(deps.isolation ? { isolation: deps.isolation } : {}),
    ...(docker.firewall.mode === 'install'
      ? { firewall: { command: docker.firewall.command, allow: docker.firewall.allow.map(allowedDestination) } }
      : {}),
  });
  return { runtime, hosts: [host] };
}
