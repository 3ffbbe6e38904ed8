/**
 * The engine's `GET /info`, read once at start to discover the host (discover-host.ts). Plain
 * node:http over the engine's socket, so discovery needs nothing of the Docker client the runtime
 * uses.
 */
import { request } from 'node:http';

/** The fields of `GET /info` discovery reads (the engine answers many more). */
export interface EngineInfo {
  /** The engine host's name: the default host id. */
  Name?: string;
  NCPU?: number;
  /** bytes */
  MemTotal?: number;
  ServerVersion?: string;
  /** The storage driver, e.g. `overlay2`. */
  Driver?: string;
  /** The storage driver's label/value pairs, e.g. `["Backing Filesystem", "extfs"]`. */
  DriverStatus?: Array<[string, string]> | null;
  /** Where the engine keeps images, containers and volumes. */
  DockerRootDir?: string;
  /** Runtimes registered with the engine, by name (`nvidia` when the NVIDIA Container Toolkit is configured). */
  Runtimes?: Record<string, unknown> | null;
  /** CDI spec directories; empty when CDI is off (API 1.45+). */
  CDISpecDirs?: string[] | null;
  /** Devices the engine discovered, e.g. `{ Source: 'cdi', ID: 'nvidia.com/gpu=0' }` (API 1.50+). */
  DiscoveredDevices?: Array<{ Source?: string; ID?: string }> | null;
}

/** Where an engine listens: a unix socket, or a TCP address (plain HTTP). */
export type EngineAddress = { socketPath: string } | { host: string; port: number };

/**
 * Reads a `DOCKER_HOST`-style address: `unix:///path/docker.sock` or `tcp://host:port` (port 2375
 * when absent). TLS (`https://`, `DOCKER_TLS_VERIFY`) and `ssh://` are not supported.
 */
export function parseDockerHost(dockerHost: string): EngineAddress {
  if (dockerHost.startsWith('unix://')) {
    const socketPath = dockerHost.slice('unix://'.length);
    if (!socketPath.startsWith('/')) throw new Error(`DOCKER_HOST "${dockerHost}" must name an absolute socket path (unix:///path/docker.sock)`);
    return { socketPath };
  }
  const tcp = /^(?:tcp|http):\/\/(\[[^\]]+\]|[^:/]+)(?::(\d+))?\/?$/.exec(dockerHost);
  if (tcp) return { host: tcp[1]!.replace(/^\[|\]$/g, ''), port: tcp[2] ? Number(tcp[2]) : 2375 };
  throw new Error(`DOCKER_HOST "${dockerHost}" is not supported: use unix:///path/docker.sock or tcp://host:port (plain HTTP)`);
}

/** Whether the engine runs on this machine (so its data root's free space can be read here). */
export function isLocalEngine(address: EngineAddress): boolean {
  return 'socketPath' in address || ['127.0.0.1', 'localhost', '::1'].includes(address.host);
}

/** An engine that did not answer: the message names the address and what went wrong. */
export class EngineUnreachable extends Error {
  override readonly name = 'EngineUnreachable';
}

/** `GET /info` of the engine at `dockerHost`; rejects with {@link EngineUnreachable} naming the address. */
export async function fetchEngineInfo(dockerHost: string, options: { timeoutMs?: number } = {}): Promise<EngineInfo> {
  const address = parseDockerHost(dockerHost);
  const timeoutMs = options.timeoutMs ?? 5000;
  const body = await new Promise<string>((resolve, reject) => {
    const req = request({ ...address, path: '/info', method: 'GET', headers: { host: 'docker' }, timeout: timeoutMs }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('error', reject);
      res.on('end', () => {
        if (res.statusCode === 200) resolve(text);
        else reject(new Error(`answered ${res.statusCode}: ${text.trim().slice(0, 200)}`));
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  }).catch((err: unknown) => {
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'EACCES' ? `${e.message} (the user running gantry needs access to the socket: the docker group, or root)` : e.message;
    throw new EngineUnreachable(`cannot reach the Docker Engine at ${dockerHost}: ${why}`);
  });
  let info: unknown;
  try {
    info = JSON.parse(body);
  } catch {
    throw new EngineUnreachable(`the Docker Engine at ${dockerHost} answered GET /info with something other than JSON`);
  }
  if (typeof info !== 'object' || info === null || Array.isArray(info)) throw new EngineUnreachable(`the Docker Engine at ${dockerHost} answered GET /info with no object`);
  return info as EngineInfo;
}
