/**
 * The agent protocol over HTTP (docs/fleet.md), with Node's fetch: JSON bodies, the host
 * credential as a bearer token, every call under a timeout (a long poll: its wait plus some
 * slack). What it cannot use (no answer, a 5xx or 429, a body that is not the protocol's) is
 * {@link ControlPlaneUnreachable}; a 4xx problem is a {@link ControlPlaneRefusal}. Error messages
 * name the server and the route, never the token or the credential.
 */
import {
  AGENT_API_PREFIX,
  type JoinAnswer,
  type JoinRequest,
  type Operation,
  type ReportAnswer,
  type ReportRequest,
} from '../fleet/protocol.js';
import { ControlPlaneRefusal, ControlPlaneUnreachable, type AgentTransport } from './agent-transport.js';
import { describeConnectFailure } from '../transport/tls-trust.js';

export interface HttpAgentTransportOptions {
  /** A join or a report gives up after this long. @default 10000 */
  timeoutMs?: number;
  /** A long poll gives up this long after the wait it asked for. @default 10000 */
  pollSlackMs?: number;
  /** @default "gantry-agent" */
  userAgent?: string;
}

/** A problem's detail is cut to this many characters in messages. */
const MAX_DETAIL_CHARS = 500;

interface Call {
  server: string;
  method: 'GET' | 'POST';
  path: string;
  credential: string | null;
  body?: unknown;
  timeoutMs: number;
  signal?: AbortSignal;
}

export class HttpAgentTransport implements AgentTransport {
  readonly #timeoutMs: number;
  readonly #pollSlackMs: number;
  readonly #userAgent: string;

  constructor(options: HttpAgentTransportOptions = {}) {
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#pollSlackMs = options.pollSlackMs ?? 10_000;
    this.#userAgent = options.userAgent ?? 'gantry-agent';
  }

  async join(server: string, body: JoinRequest): Promise<JoinAnswer> {
    const answer = await this.#call({
      server,
      method: 'POST',
      path: '/join',
      credential: null,
      body,
      timeoutMs: this.#timeoutMs,
    });
    const a = answer as Partial<JoinAnswer> | null;
    if (
      typeof a?.hostId !== 'string' ||
      typeof a.credential !== 'string' ||
      !a.credential.startsWith('ghc_') ||
      typeof a.dataCenterId !== 'string' ||
      (a.cloud !== 'SECURE' && a.cloud !== 'COMMUNITY')
    )
      throw new ControlPlaneUnreachable(
        `${server} answered POST ${AGENT_API_PREFIX}/join without a host id, credential, data center and cloud`,
      );
    return {
      hostId: a.hostId,
      credential: a.credential,
      dataCenterId: a.dataCenterId,
      cloud: a.cloud,
      heartbeatMs: Number(a.heartbeatMs),
      pollWaitMs: Number(a.pollWaitMs),
      ...(typeof a.controlPlaneVersion === 'string' ? { controlPlaneVersion: a.controlPlaneVersion.slice(0, 64) } : {}),
    };
  }

  async report(server: string, credential: string, body: ReportRequest): Promise<ReportAnswer> {
    const answer = (await this.#call({
      server,
      method: 'POST',
      path: '/report',
      credential,
      body,
      timeoutMs: this.#timeoutMs,
    })) as Partial<ReportAnswer> | null;
    const refused = Array.isArray(answer?.refused) ? answer.refused.filter((r) => typeof r?.id === 'string') : [];
    const ignored = Array.isArray(answer?.ignoredAcks)
      ? answer.ignoredAcks.filter((r) => typeof r?.opId === 'string')
      : [];
    return {
      now: typeof answer?.now === 'number' ? answer.now : 0,
      refused: refused.map((r) => ({ id: r.id, reason: String(r.reason ?? '') })),
      ignoredAcks: ignored.map((r) => ({ opId: r.opId, reason: String(r.reason ?? '') })),
      ...(answer?.sendFull === true ? { sendFull: true as const } : {}),
      ...(typeof answer?.jobUrl === 'string' ? { jobUrl: answer.jobUrl } : {}),
    };
  }

  async operations(
    server: string,
    credential: string,
    query: { after: number; waitMs: number },
    signal: AbortSignal,
  ): Promise<Operation[]> {
    const path = `/operations?after=${encodeURIComponent(query.after)}&waitMs=${encodeURIComponent(query.waitMs)}`;
    const answer = (await this.#call({
      server,
      method: 'GET',
      path,
      credential,
      timeoutMs: query.waitMs + this.#pollSlackMs,
      signal,
    })) as { operations?: unknown } | null;
    const operations = answer?.operations;
    if (!Array.isArray(operations) || !operations.every(isOperation))
      throw new ControlPlaneUnreachable(
        `${server} answered GET ${AGENT_API_PREFIX}/operations with no list of operations`,
      );
    return operations;
  }

  async #call(call: Call): Promise<unknown> {
    const { server, method, path, timeoutMs, signal } = call;
    const what = `${method} ${AGENT_API_PREFIX}${path.replace(/\?.*$/, '')}`;
    const url = `${server.replace(/\/+$/, '')}${AGENT_API_PREFIX}${path}`;
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': this.#userAgent };
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    if (call.credential) headers.authorization = `Bearer ${call.credential}`;
    const abort = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort();
    }, timeoutMs);
    const cancel = () => abort.abort(signal?.reason);
    signal?.addEventListener('abort', cancel, { once: true });
    let status: number;
    let text: string;
    let contentType: string;
    try {
      if (signal?.aborted) throw signal.reason;
      const res = await fetch(url, {
        method,
        headers,
        ...(call.body !== undefined ? { body: JSON.stringify(call.body) } : {}),
        signal: abort.signal,
      });
      status = res.status;
      contentType = res.headers.get('content-type') ?? '';
      text = await res.text();
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      if (timedOut) throw new ControlPlaneUnreachable(`${server} did not answer ${what} within ${timeoutMs} ms`);
      const cause = (err as { cause?: NodeJS.ErrnoException }).cause;
      throw new ControlPlaneUnreachable(
        `cannot reach ${server} (${what}): ${cause?.code ? describeConnectFailure(cause.code) : (cause?.message ?? (err as Error).message)}`,
      );
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', cancel);
    }
    let parsed: unknown = undefined;
    if (/json/i.test(contentType)) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    }
    if (status >= 200 && status < 300) {
      if (parsed === undefined)
        throw new ControlPlaneUnreachable(
          `${server} answered ${what} with ${status} and no JSON (is it a Gantry control plane?)`,
        );
      return parsed;
    }
    const problem = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as {
      code?: unknown;
      detail?: unknown;
      title?: unknown;
    };
    const code = typeof problem.code === 'string' ? problem.code : null;
    const said =
      typeof problem.detail === 'string'
        ? problem.detail
        : typeof problem.title === 'string'
          ? problem.title
          : (text.trim().split('\n')[0] ?? '');
    const detail = said.length > MAX_DETAIL_CHARS ? `${said.slice(0, MAX_DETAIL_CHARS)}…` : said;
    // A 404 without a problem code: no Gantry control plane at this URL (a proxy, a wrong path).
    if (status >= 500 || status === 429 || (status === 404 && code === null))
      throw new ControlPlaneUnreachable(
        `${server} answered ${what} with ${status}${code ? ` ${code}` : ''}${detail ? `: ${detail}` : ''}`,
      );
    throw new ControlPlaneRefusal(status, code, detail || `HTTP ${status}`);
  }
}

function isOperation(v: unknown): v is Operation {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as Record<string, unknown>;
  return typeof o.id === 'string' && typeof o.seq === 'number' && Number.isFinite(o.seq) && typeof o.kind === 'string';
}
