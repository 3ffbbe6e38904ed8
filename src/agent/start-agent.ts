/**
 * The agent's composition root (what `gantry agent` runs): the data dir, the host discovered from
 * its engine, the applied-operations file, the HTTP transport, and the Docker runtime over the
 * local engine, handed to an {@link AgentCore}.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Host } from '../domain/catalog.js';
import { systemClock } from '../domain/clock.js';
import { describeHost } from '../runtime/docker/discover-host.js';
import { DockerRuntime } from '../runtime/docker/docker-runtime.js';
import { EngineUnreachable } from '../runtime/docker/engine-info.js';
import { AgentCore } from './agent-core.js';
import { AgentFatal } from './agent-fatal.js';
import { AppliedOperations } from './applied-operations.js';
import { CredentialFile, prepareDataDir } from './credential-file.js';
import { discoverAgentHost, type AgentHostSettings } from './host-capacity.js';
import { HttpAgentTransport } from './http-agent-transport.js';
import { systemTimers } from './timers.js';

const APPLIED_FILE = 'applied.json';

export interface AgentOptions extends AgentHostSettings {
  /** the control plane's URLs, tried in turn */
  servers: string[];
  token: string | null;
  dataDir: string;
  name: string;
  /** labels what the agent creates on the engine; stable across restarts (adoption finds containers by it) */
  namespace: string;
  agentVersion: string;
  logger: Logger;
  /** the environment nvidia-smi runs in @default process.env */
  env?: NodeJS.ProcessEnv;
  /** The container firewall's command prefix; null: not installed (`--firewall off`). */
  firewall: { command: string[] } | null;
  /** where account networks take their /24s */
  networkPool: string;
  /**
   * Registries the engine may pull from although they are on a private address (the host's own
   * network: `runtime.docker.registries.allow` for this host). @default [] (none)
   */
  registriesAllow?: string[];
}

/** SIGTERM → SIGKILL grace of a stop operation (the control plane's default `pods.stopGraceMs`). */
const STOP_GRACE_MS = 5_000;

const LOOPBACK = /^(127\.|::1$|localhost$)/;

/** Builds the agent; `run()` it. Rejects with {@link AgentFatal} when it cannot start. */
export async function createAgent(options: AgentOptions): Promise<AgentCore> {
  const { logger } = options;
  await prepareDataDir(options.dataDir, logger);
  const credentials = new CredentialFile(options.dataDir);
  // Said before the engine is asked anything: nothing else can go on without one or the other.
  if (!options.token && !(await credentials.load()))
    throw new AgentFatal(
      `no host credential in ${credentials.path} and no join token: create one with gantry hosts token create, and pass it with --token (or GANTRY_AGENT_TOKEN)`,
      2,
    );

  const discover = async () => {
    try {
      return await discoverAgentHost(options, options.env ? { env: options.env } : {});
    } catch (err) {
      if (err instanceof EngineUnreachable)
        throw new AgentFatal(`${err.message}. Start the engine, or point --docker-host (DOCKER_HOST) at it`, 1);
      throw err;
    }
  };
  const discovered = await discover();
  for (const note of discovered.capacity.notes) logger.warn({ note }, 'host discovery');
  logger.info(
    { host: describeHost(discovered.host).replace(/^\S+ \(\S+\): /, ''), publicIp: discovered.host.publicIp },
    'discovered the host',
  );
  if (LOOPBACK.test(discovered.host.publicIp))
    logger.warn(
      { publicIp: discovered.host.publicIp },
      "pods' ports are announced at a loopback address: pass --public-ip with the address clients reach this host at",
    );

  for (const server of options.servers) {
    const url = new URL(server);
    if (url.protocol === 'http:' && !LOOPBACK.test(url.hostname.replace(/^\[|\]$/g, '')))
      logger.warn(
        { server },
        'this control-plane URL is plain http: the host credential and the operations (registry credentials included) cross the network unencrypted; use https',
      );
  }
  const applied = await AppliedOperations.open(join(options.dataDir, APPLIED_FILE), { logger });
  let runtimeHost: Host | null = null;
  return new AgentCore({
    transport: new HttpAgentTransport({ userAgent: `gantry-agent/${options.agentVersion}` }),
    credentials,
    applied,
    capacity: discovered.capacity,
    discoverCapacity: async () => {
      const again = await discover();
      // New starts map GPU indices onto the GPUs as they are now, as the control plane will.
      if (runtimeHost)
        Object.assign(runtimeHost, {
          gpuUuids: again.host.gpuUuids,
          gpuMode: again.host.gpuMode,
          gpuTypeId: again.host.gpuTypeId,
          gpuCount: again.host.gpuCount,
        });
      return again.capacity;
    },
    createRuntime: (identity) => {
      runtimeHost = {
        ...discovered.host,
        id: identity.hostId,
        dataCenterId: identity.dataCenterId,
        cloud: identity.cloud,
      };
      return new DockerRuntime({
        dockerHost: options.dockerHost,
        namespace: options.namespace,
        host: runtimeHost,
        bindIp: '0.0.0.0',
        images: {},
        clock: systemClock,
        logger: logger.child({ component: 'runtime' }),
        stopGraceMs: STOP_GRACE_MS,
        // its utilisation sampler asks the same nvidia-smi discovery did
        nvidiaSmi: options.nvidiaSmi,
        networks: { pool: options.networkPool, subnetPrefix: 24 },
        registries: { allow: options.registriesAllow ?? [], only: false, private: 'refuse' },
        ...(options.firewall ? { firewall: { command: options.firewall.command, allow: [] } } : {}),
      });
    },
    clock: systemClock,
    timers: systemTimers,
    logger,
    config: {
      servers: options.servers,
      token: options.token,
      name: options.name,
      publicIp: discovered.host.publicIp,
      portRange: options.portRange,
      agentVersion: options.agentVersion,
    },
  });
}
