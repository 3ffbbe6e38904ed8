/**
 * The engine's `GET /info`, read once at start to discover the host (discover-host.ts), through
 * the same client the runtime uses.
 */
import { DockerClient } from './docker-client.js';
import { DockerEngineError, isUnreachable, parseDockerHost, type EngineAddress } from './engine-connection.js';
import type { EngineInfo as FullEngineInfo } from './engine-types.js';

export { parseDockerHost, type EngineAddress };

/** `GET /info` as discovery reads it: every field may be missing (older engines answer fewer). */
export type EngineInfo = Partial<FullEngineInfo>;

/** Whether the engine runs on this machine (so its data root's free space can be read here). */
export function isLocalEngine(address: EngineAddress): boolean {
  return address.socketPath !== undefined || ['127.0.0.1', 'localhost', '::1'].includes(address.host);
}

/** An engine that did not answer: the message names the address and what went wrong. */
export class EngineUnreachable extends Error {
  override readonly name = 'EngineUnreachable';
}

/** `GET /info` of the engine at `dockerHost`; rejects with {@link EngineUnreachable} naming the address. */
export async function fetchEngineInfo(dockerHost: string, options: { timeoutMs?: number } = {}): Promise<EngineInfo> {
  parseDockerHost(dockerHost);
  const client = new DockerClient({ dockerHost, timeoutMs: options.timeoutMs ?? 5000 });
  try {
    const info: unknown = await client.info();
    if (typeof info !== 'object' || info === null || Array.isArray(info))
      throw new EngineUnreachable(`the Docker Engine at ${dockerHost} answered GET /info with no object`);
    return info;
  } catch (err) {
    if (err instanceof EngineUnreachable) throw err;
    const cause = isUnreachable(err) ? err.cause : (err as NodeJS.ErrnoException);
    const code = (cause as NodeJS.ErrnoException).code;
    const why =
      code === 'EACCES'
        ? `${cause.message} (the user running gantry needs access to the socket: the docker group, or root)`
        : err instanceof DockerEngineError
          ? err.message
          : cause.message;
    throw new EngineUnreachable(`cannot reach the Docker Engine at ${dockerHost}: ${why}`);
  } finally {
    client.close();
  }
}
