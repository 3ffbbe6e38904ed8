import type { Logger } from 'pino';
import type { ImageSpec } from '../../domain/image-spec.js';
import type { Host } from '../../domain/catalog.js';
import type { Clock } from '../../domain/clock.js';
import type { RegistryPolicyConfig } from '../../domain/registry-policy.js';
import type { SamplerTimers } from '../interval-sampler.js';
import type { AllowedDestination } from './firewall-rules.js';

/** What the Docker runtime is built with (the composition root, later `gantry agent`, fills it). */
export interface DockerRuntimeOptions {
  /** The engine: `unix:///path/docker.sock` or `tcp://host:port` (DOCKER_HOST, else the default socket). */
  dockerHost: string;
  /**
   * Written on every container, volume and network this installation makes (label
   * `gantry.namespace`, and in their names), so several installations (and test runs) share one
   * engine without touching each other's. Stable across restarts: adoption finds containers by it.
   */
  namespace: string;
  /** The host this engine is, as discovered (GPU UUIDs by index, gpuMode, public IP, port range). */
  host: Host;
  /** Address published ports bind on. @default '0.0.0.0' */
  bindIp: string;
  /** The config's images map: only an entry's `health` is read (a readiness probe for that image). */
  images: Record<string, ImageSpec>;
  clock: Clock;
  logger: Logger;
  /** SIGTERM → SIGKILL grace of a stop. */
  stopGraceMs: number;
  /** An engine call (other than a pull, a stop or a wait) gives up after this long. @default 30000 */
  engineTimeoutMs?: number;
  /** Reconnecting to an unreachable engine: the first retry's delay, doubled up to `maxMs`. @default { initialMs: 250, maxMs: 10000 } */
  reconnect?: { initialMs: number; maxMs: number };
  /** A container's json-file log is rotated past this size, two files kept (only when the engine logs to json-file). @default 10 MiB */
  logMaxBytes?: number;
  /** Container starts (pull, create, start) sent to the engine at once; the rest wait their turn. @default 4 */
  maxConcurrentStarts?: number;
  /**
   * Which registries an image may be pulled from, checked before every pull (the services check
   * images where they enter; this holds for whatever reaches a start). @default any public registry, none on a non-public address
   */
  registries?: RegistryPolicyConfig;
  /**
   * Open files a container may hold (soft and hard). An engine whose own limit is lower refuses to
   * raise a container's: containers then keep the engine's limit, and the runtime says so.
   * @default 65536 (CONTAINER_NOFILE_LIMIT)
   */
  openFilesLimit?: number;
  /** How often the shared sampler reads live containers' figures (container-sampler.ts). Config `runtime.statsIntervalMs`. @default 5000 */
  statsIntervalMs?: number;
  /** How the sampler waits (tests: fake timers). @default real timers */
  timers?: SamplerTimers;
  /** The nvidia-smi the sampler runs on a host with discovered GPUs. Config `runtime.docker.nvidiaSmi`. @default 'nvidia-smi' */
  nvidiaSmi?: string;
  /** The environment nvidia-smi runs in (its PATH finds the command). @default process.env */
  nvidiaSmiEnv?: NodeJS.ProcessEnv;
  /**
   * Where account networks take their subnets (instance-networks.ts). Config `runtime.docker.networks`.
   * `emptyGraceMs`: how long a network no instance uses is kept before it is removed.
   * @default { pool: '10.224.0.0/12', subnetPrefix: 24, emptyGraceMs: 600000 }
   */
  networks?: { pool: string; subnetPrefix: number; emptyGraceMs?: number };
  /**
   * The container firewall (container-firewall.ts): installed at attach and after every reconnect,
   * by running `command` (a prefix, e.g. `['nsenter', '--net=/run/netns/x']`; empty: iptables as
   * it is) with `allow` let through besides the job API. Absent: not installed here (the operator
   * installs it, or accepts its absence). Config `runtime.docker.firewall`.
   */
  firewall?: { command: string[]; allow: AllowedDestination[] };
  /**
   * The isolation defences, each on by default. Turned off only to show that another defence holds
   * on its own (the isolation tests), never by the config.
   */
  isolation?: { accountNetworks?: boolean; hardening?: boolean };
}

/** A container's json-file log is rotated past this size (two files kept). @see DockerRuntimeOptions.logMaxBytes */
export const DEFAULT_LOG_MAX_BYTES = 10 * 1024 * 1024;
