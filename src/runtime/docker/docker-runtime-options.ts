import type { Logger } from 'pino';
import type { ImageSpec } from '../../config.js';
import type { Host } from '../../domain/catalog.js';
import type { Clock } from '../../domain/clock.js';

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
}
