/**
 * The transport to a Docker Engine: HTTP/1.1 over its unix socket or a `tcp://` address, through
 * Node's own `node:http`.
 *
 * Why node:http rather than dockerode: dockerode brings docker-modem, ssh2 and their native and
 * transitive dependencies for a surface we use a dozen calls of; here the calls are typed for
 * exactly what the runtime needs (docker-client.ts), we own the streams (pull progress, events,
 * logs) and their timeouts and errors, and nothing but Node itself is involved, so it behaves the
 * same on Node 20, 22 and 24.
 *
 * Paths are unversioned (`/containers/json`, not `/v1.41/containers/json`): the engine answers them
 * at its own API version, and every field used here exists since API 1.41 (Engine 20.10).
 */
import { Agent, request, type IncomingMessage, type RequestOptions } from 'node:http';
import type { Readable } from 'node:stream';

/** Calls without a timeout of their own give up after this long. @default 30000 */
export const DEFAULT_ENGINE_TIMEOUT_MS = 30_000;

/** Connection failures that mean nothing answers at the address (rather than a failed call). */
const UNREACHABLE_CODES = new Set([
  'ENOENT',
  'ECONNREFUSED',
  'EACCES',
  'EPERM',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENOTSOCK',
]);

/** The engine answered with an error status; `message` is what we were doing, then its message. */
export class DockerEngineError extends Error {
  constructor(
    readonly doing: string,
    readonly statusCode: number,
    readonly engineMessage: string,
  ) {
    super(`${doing}: ${engineMessage}`);
    this.name = 'DockerEngineError';
  }
}

/** Nothing answers at the engine's address. */
export class DockerUnreachableError extends Error {
  constructor(
    readonly address: string,
    override readonly cause: Error,
  ) {
    super(`the Docker Engine at ${address} is unreachable: ${cause.message}`);
    this.name = 'DockerUnreachableError';
  }
}

export const isUnreachable = (err: unknown): err is DockerUnreachableError => err instanceof DockerUnreachableError;
export const isNotFound = (err: unknown): boolean => err instanceof DockerEngineError && err.statusCode === 404;

export interface EngineRequest {
  method: 'GET' | 'POST' | 'DELETE' | 'PUT' | 'HEAD';
  /** unversioned, e.g. `/containers/json` */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  /** sent as JSON */
  body?: unknown;
  /** sent as is (a tar for an image import), with `contentType` */
  bodyStream?: Readable;
  contentType?: string;
  headers?: Record<string, string>;
  /** For a JSON call: the whole exchange. For a stream: until the response's headers. @default the connection's */
  timeoutMs?: number;
  /** What is being done, for error messages: `pulling image "x"`. */
  doing: string;
}

export type EngineAddress =
  { socketPath: string; host?: undefined; port?: undefined } | { socketPath?: undefined; host: string; port: number };

/** `unix:///var/run/docker.sock` or `tcp://host:2375` (an `http://` address is read as tcp). */
export function parseDockerHost(dockerHost: string): EngineAddress {
  if (dockerHost.startsWith('unix://')) {
    const socketPath = dockerHost.slice('unix://'.length);
    if (!socketPath.startsWith('/'))
      throw new Error(`DOCKER_HOST ${dockerHost} must name an absolute socket path (unix:///path/docker.sock)`);
    return { socketPath };
  }
  const match = /^(?:tcp|http):\/\/(\[[^\]]+\]|[^:/]+)(?::(\d+))?\/?$/.exec(dockerHost);
  if (!match)
    throw new Error(
      `DOCKER_HOST ${dockerHost} is neither unix:///path nor tcp://host:port (TLS engines are not supported)`,
    );
  const host = match[1]!.replace(/^\[|\]$/g, '');
  return { host, port: match[2] ? Number(match[2]) : 2375 };
}

export interface EngineConnectionOptions {
  dockerHost: string;
  /** @default 30000 */
  timeoutMs?: number;
}

/** One engine's address, its keep-alive sockets, and requests with timeouts and readable errors. */
export class EngineConnection {
  readonly address: string;
  readonly #target: EngineAddress;
  readonly #agent: Agent;
  readonly #timeoutMs: number;

  constructor(options: EngineConnectionOptions) {
    this.address = options.dockerHost;
    this.#target = parseDockerHost(options.dockerHost);
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_ENGINE_TIMEOUT_MS;
    // Bounded: thousands of concurrent starts queue here rather than open thousands of sockets.
    // Long-lived streams (events) bypass the pool, so they never hold a pooled socket.
    this.#agent = new Agent({ keepAlive: true, maxSockets: 32 });
  }

  /** Sends the request and parses the JSON answer (undefined for an empty one); a status ≥ 400 rejects. */
  async json<T>(req: EngineRequest): Promise<{ status: number; body: T }> {
    const timeoutMs = req.timeoutMs ?? this.#timeoutMs;
    const abort = new AbortController();
    const deadline = setTimeout(() => abort.abort(), timeoutMs);
    try {
      const res = await this.#send(req, { signal: abort.signal, timeoutMs, pooled: true });
      const text = await readText(res);
      if (!text) return { status: res.statusCode ?? 0, body: undefined as T };
      try {
        return { status: res.statusCode ?? 0, body: JSON.parse(text) as T };
      } catch {
        throw new Error(`${req.doing}: the engine answered something other than JSON: ${text.slice(0, 200)}`);
      }
    } catch (err) {
      if (abort.signal.aborted) throw this.#timedOut(req.doing, timeoutMs);
      throw err;
    } finally {
      clearTimeout(deadline);
    }
  }

  /**
   * Sends the request and resolves with the response once its headers arrive (a status ≥ 400
   * rejects). The caller reads the body; `signal` ends it. Streams do not use the keep-alive pool.
   */
  async stream(req: EngineRequest, signal?: AbortSignal): Promise<IncomingMessage> {
    const timeoutMs = req.timeoutMs ?? this.#timeoutMs;
    const abort = new AbortController();
    const deadline = setTimeout(() => abort.abort(), timeoutMs);
    const onAbort = (): void => abort.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return await this.#send(req, { signal: abort.signal, timeoutMs, pooled: false });
    } catch (err) {
      if (abort.signal.aborted && !signal?.aborted) throw this.#timedOut(req.doing, timeoutMs);
      throw err;
    } finally {
      clearTimeout(deadline);
      signal?.removeEventListener('abort', onAbort);
      // From here on, the caller's signal ends the response.
      if (signal && !signal.aborted) signal.addEventListener('abort', () => abort.abort(), { once: true });
    }
  }

  /** Closes its pooled sockets, in use or idle: a connection is not used after. */
  close(): void {
    this.#agent.destroy();
  }

  #timedOut(doing: string, timeoutMs: number): Error {
    return new Error(`${doing}: the Docker Engine at ${this.address} did not answer within ${timeoutMs} ms`);
  }

  #send(
    req: EngineRequest,
    opts: { signal: AbortSignal; timeoutMs: number; pooled: boolean },
  ): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { ...req.headers };
      let payload: Buffer | null = null;
      if (req.body !== undefined) {
        payload = Buffer.from(JSON.stringify(req.body));
        headers['content-type'] = 'application/json';
        headers['content-length'] = String(payload.length);
      } else if (req.bodyStream) {
        headers['content-type'] = req.contentType ?? 'application/octet-stream';
      }
      const options: RequestOptions = {
        ...(this.#target.socketPath
          ? { socketPath: this.#target.socketPath }
          : { host: this.#target.host, port: this.#target.port }),
        method: req.method,
        path: req.path + queryString(req.query),
        headers,
        agent: opts.pooled ? this.#agent : false,
        signal: opts.signal,
      };
      const r = request(options, (res) => {
        const status = res.statusCode ?? 0;
        if (status < 400) {
          resolve(res);
          return;
        }
        readText(res).then(
          (text) => reject(new DockerEngineError(req.doing, status, engineMessage(text, status))),
          (err: unknown) => reject(err instanceof Error ? err : new Error(String(err))),
        );
      });
      // A long-lived stream over TCP learns of a vanished engine from keep-alive probes, not silence.
      if (!opts.pooled && this.#target.host !== undefined)
        r.once('socket', (socket) => socket.setKeepAlive(true, 15_000));
      r.once('error', (err: NodeJS.ErrnoException) => {
        if (opts.signal.aborted) reject(err);
        else if (err.code && UNREACHABLE_CODES.has(err.code)) reject(new DockerUnreachableError(this.address, err));
        else reject(new Error(`${req.doing}: ${err.message}`));
      });
      if (payload) r.end(payload);
      else if (req.bodyStream) {
        req.bodyStream.once('error', (err) => r.destroy(err));
        req.bodyStream.pipe(r);
      } else r.end();
    });
  }
}

function queryString(query: EngineRequest['query']): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.append(key, String(value));
  const s = params.toString();
  return s ? `?${s}` : '';
}

async function readText(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The engine's `{"message": …}`, or the body itself, or the bare status. */
function engineMessage(text: string, status: number): string {
  try {
    const parsed = JSON.parse(text) as { message?: unknown };
    if (typeof parsed.message === 'string' && parsed.message) return parsed.message;
  } catch {
    // not JSON: use the text
  }
  return text.trim() || `the engine answered HTTP ${status}`;
}
