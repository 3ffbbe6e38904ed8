/**
 * The client of Gantry's public REST API (/v2 and the job API): JSON in, JSON out, the key in the
 * Authorization header only. An answer that is not 2xx becomes a CliError carrying the problem's
 * title and detail (application/problem+json) and the exit status of its HTTP status.
 */
import { CliError, EXIT, exitCodeOf } from './exit-codes.js';
import { describeConnectFailure } from '../../transport/tls-trust.js';

/** How long a plain request may take before the CLI gives up on it. */
const REQUEST_TIMEOUT_MS = 60_000;

type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  body?: unknown;
  query?: Query;
  /** Overrides the plain request timeout (long-polls); 0: none (a stream followed until stopped). */
  timeoutMs?: number;
  headers?: Record<string, string>;
}

interface Problem {
  title?: unknown;
  status?: unknown;
  detail?: unknown;
  code?: unknown;
  errors?: unknown;
}

/** `title (status CODE): detail`, then one line per validation error. */
function problemMessage(status: number, problem: Problem | null, fallback: string): string {
  if (!problem || typeof problem.title !== 'string') return `HTTP ${status}: ${fallback.slice(0, 300) || 'no body'}`;
  const code = typeof problem.code === 'string' ? ` ${problem.code}` : '';
  const detail = typeof problem.detail === 'string' && problem.detail ? `: ${problem.detail}` : '';
  const errors = Array.isArray(problem.errors) ? problem.errors.map((e) => `\n  - ${String(e)}`).join('') : '';
  return `${problem.title} (${status}${code})${detail}${errors}`;
}

export class ApiClient {
  /** `url` is the server's base URL (a trailing `/v2` or slash is dropped). */
  readonly baseUrl: string;
  readonly #key: string;

  constructor(url: string, key: string) {
    this.baseUrl = url.replace(/\/+$/, '').replace(/\/v2$/, '');
    this.#key = key;
  }

  #url(path: string, query: Query = {}): string {
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    return url.href;
  }

  /** Sends the request; answers the response, or throws when the server cannot be reached. */
  async fetch(
    method: string,
    path: string,
    options: RequestOptions & { signal?: AbortSignal } = {},
  ): Promise<Response> {
    const timeout = options.timeoutMs === 0 ? undefined : AbortSignal.timeout(options.timeoutMs ?? REQUEST_TIMEOUT_MS);
    const signals = [options.signal, timeout].filter((s): s is AbortSignal => s !== undefined);
    const signal = signals.length > 0 ? AbortSignal.any(signals) : undefined;
    try {
      return await fetch(this.#url(path, options.query), {
        method,
        headers: {
          authorization: `Bearer ${this.#key}`,
          accept: 'application/json',
          'user-agent': 'gantry-cli',
          ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...options.headers,
        },
        ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      if (options.signal?.aborted) throw err;
      if (timeout?.aborted) throw new CliError(EXIT.error, `${method} ${path}: no answer from ${this.baseUrl} in time`);
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new CliError(
        EXIT.error,
        `cannot reach ${this.baseUrl}: ${cause?.code ? describeConnectFailure(cause.code) : (cause?.message ?? (err as Error).message)}`,
      );
    }
  }

  /** Throws the answer's problem unless it is 2xx. */
  async check(res: Response): Promise<Response> {
    if (res.ok) return res;
    const text = await res.text().catch(() => '');
    let problem: Problem | null;
    try {
      problem = JSON.parse(text) as Problem;
    } catch {
      problem = null;
    }
    throw new CliError(exitCodeOf(res.status), problemMessage(res.status, problem, text));
  }

  /** A JSON request; answers the parsed body (undefined for 204). */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const res = await this.check(await this.fetch(method, path, options));
    const text = await res.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  get<T>(path: string, query?: Query): Promise<T> {
    return this.request<T>('GET', path, query ? { query } : {});
  }
}
