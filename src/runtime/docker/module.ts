/**
 * `runtime: docker`: instances are containers on one Docker Engine, on the one host discovered
 * from it at start (runtime.docker sets what of it is configured rather than discovered). The
 * adapter is loaded only by a server that runs containers (kept out of the static import graph).
 */
import type { Host } from '../../domain/catalog.js';
import { fixedHosts } from '../host-feed.js';
import { RuntimeStartRefused, type RuntimeModule, type RuntimePrepareDeps } from '../runtime-module.js';
import type { Runtime } from '../runtime.js';
import { checkEngineAddress, DockerRuntimeSchema } from './config.js';
import { describeHost, discoverEngineHost } from './discover-host.js';
import type { DockerRuntimeOptions } from './docker-runtime-options.js';
import { EngineUnreachable } from './engine-info.js';

/** What `./docker-runtime.js` exports. */
export interface DockerRuntimeModule {
  DockerRuntime: new (options: DockerRuntimeOptions) => Runtime;
}

/** What the start found before anything opened: the engine's host, and how to load the adapter. */
interface DockerPrepared {
  host: Host;
  env: NodeJS.ProcessEnv | undefined;
  defences: RuntimePrepareDeps['defences'];
  load: () => Promise<DockerRuntimeModule>;
}

/** Loaded only by a server that runs containers (the bundle keeps it in a chunk of its own). */
const importDockerRuntime = (): Promise<DockerRuntimeModule> => import('./docker-runtime.js');

/** A config `runtime.docker.firewall.allow` entry (`10.0.0.5`, `10.0.0.0/8`, `10.0.0.5:5432`), as the schema checked it. */
function allowedDestination(entry: string): { cidr: string; port: number | null } {
  const [address = '', port] = entry.split(':');
  return { cidr: address.includes('/') ? address : `${address}/32`, port: port === undefined ? null : Number(port) };
}

/** The Docker runtime's module; `load` stands in for the adapter's import (tests). */
export function dockerRuntimeModule(
  load: () => Promise<DockerRuntimeModule> = importDockerRuntime,
): RuntimeModule<DockerPrepared> {
  return {
    kind: 'docker',
    capabilities: {
      liveHosts: false,
      gpuPinningByUuid: true,
      entrypointOverride: true,
      httpThroughAgent: false,
      suspendResume: true,
      imagePrePull: true,
      hostFirewall: true,
    },
    hostSource: 'discovered',
    configSection: { path: 'runtime.docker', schema: DockerRuntimeSchema },
    imagesAreCommands: false,
    checkConfig: ({ docker }, source) => checkEngineAddress(docker.host, source('runtime.docker.host')),
    isolation: (config) => ({
      ownNetworks: true,
      hardening: true,
      acceptSharedHost: false,
      acceptHostNetwork: config.runtime.docker.allowMultipleAccountsOnHostNetwork,
    }),
    async prepare({ config, logger, env, defences }) {
      let host: Host;
      try {
        ({ host } = await discoverEngineHost(config.runtime.docker, config.catalog, env ? { env } : {}));
      } catch (err) {
        if (!(err instanceof EngineUnreachable)) throw err;
        throw new RuntimeStartRefused(
          `refusing to start with runtime docker: ${err.message}. Start the engine, point DOCKER_HOST (or runtime.docker.host) at it, or set GANTRY_RUNTIME=process to run instances as local processes`,
        );
      }
      for (const note of host.notes ?? []) logger.warn({ hostId: host.id }, note);
      return { host, env, defences, load };
    },
    async create({ config, clock, logger, prepared }) {
      const { host, env, defences } = prepared;
      const docker = config.runtime.docker;
      let module: DockerRuntimeModule;
      try {
        module = await prepared.load();
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
        logger: logger.child({ component: 'runtime' }),
        stopGraceMs: config.pods.stopGraceMs,
        registries: docker.registries,
        statsIntervalMs: config.runtime.statsIntervalMs,
        nvidiaSmi: docker.nvidiaSmi,
        ...(env ? { nvidiaSmiEnv: env } : {}),
        networks: docker.networks,
        ...(defences ? { isolation: defences } : {}),
        ...(docker.firewall.mode === 'install'
          ? { firewall: { command: docker.firewall.command, allow: docker.firewall.allow.map(allowedDestination) } }
          : {}),
      });
      return { runtime, hosts: fixedHosts([host]) };
    },
    describe: (config, hosts) =>
      `runtime: docker at ${config.runtime.docker.host}, host ${hosts.map(describeHost).join('; ')}`,
  };
}

export const dockerRuntime = dockerRuntimeModule();
