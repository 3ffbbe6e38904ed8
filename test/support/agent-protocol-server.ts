/**
 * A small control plane speaking the agent protocol (`/agent/v1`, docs/fleet.md) over real HTTP,
 * for the tests of `gantry agent` and its HTTP transport. It is a seam: it stands in for the
 * control plane's own routes until they land, when these tests are to run against `gantry serve`
 * (the fleet's integration). It keeps what a test needs to see: joins, reports, polls, and each
 * host's pending operations, removed when acknowledged.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JoinRequest, NewOperation, Operation, ReportRequest } from '../../src/fleet/protocol.js';

interface HostRecord {
  hostId: string;
  credential: string;
  revoked: boolean;
  /** not yet acknowledged */
  pending: Operation[];
  seq: number;
}

export interface ReceivedReport {
  hostId: string;
  body: ReportRequest;
  /** ms epoch */
  at: number;
}

export class AgentProtocolServer {
  readonly joins: JoinRequest[] = [];
  readonly reports: ReceivedReport[] = [];
  readonly polls: Array<{ hostId: string; after: number; waitMs: number }> = [];
  readonly hosts = new Map<string, HostRecord>();
  readonly #tokens = new Set<string>();
  readonly #waiters = new Set<() => void>();
  /** answers the agent's calls get instead of the protocol's, while set (e.g. 503) */
  failWith: number | null = null;
  heartbeatMs = 1_000;
  pollWaitMs = 1_000;
  #server!: Server;
  url = '';

  static async start(): Promise<AgentProtocolServer> {
    const s = new AgentProtocolServer();
    s.#server = createServer((req, res) => void s.#handle(req, res));
    await new Promise<void>((resolve) => s.#server.listen(0, '127.0.0.1', resolve));
    s.url = `http://127.0.0.1:${(s.#server.address() as AddressInfo).port}`;
    return s;
  }

  /** A one-time join token. */
  token(): string {
    const token = `gjt_${randomBytes(16).toString('hex')}`;
    this.#tokens.add(token);
    return token;
  }

  enqueue(hostId: string, op: NewOperation): Operation {
    const host = this.hosts.get(hostId);
    if (!host) throw new Error(`no host ${hostId}`);
    host.seq += 1;
    const full = { ...op, id: `op-${randomBytes(6).toString('hex')}`, seq: host.seq };
    host.pending.push(full);
    this.#wake();
    return full;
  }

  revoke(hostId: string): void {
    this.hosts.get(hostId)!.revoked = true;
  }

  /** Waits (real time: the agent is another process) until a report satisfies `cond`; answers it. */
  async report(
    cond: (r: ReceivedReport, index: number) => boolean,
    what: string,
    timeoutMs = 30_000,
  ): Promise<ReceivedReport> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.reports.find(cond);
      if (found) return found;
      if (Date.now() > deadline)
        throw new Error(
          `no report ${what} within ${timeoutMs} ms; got ${JSON.stringify(this.reports.map((r) => r.body))}`,
        );
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async close(): Promise<void> {
    this.#wake();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #wake(): void {
    for (const wake of [...this.#waiters]) wake();
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    if (this.failWith !== null) return problem(res, this.failWith, 'UNAVAILABLE', 'the control plane is unavailable');
    if (req.method === 'POST' && url.pathname === '/agent/v1/join') {
      const body = JSON.parse(text) as JoinRequest;
      this.joins.push(body);
      if (!this.#tokens.delete(body.token))
        return problem(res, 401, 'JOIN_TOKEN_INVALID', 'the join token is unknown, used or expired');
      const hostId = `host-${randomBytes(6).toString('hex')}`;
      const credential = `ghc_${hostId}_${randomBytes(16).toString('hex')}`;
      this.hosts.set(hostId, { hostId, credential, revoked: false, pending: [], seq: 0 });
      return json(res, 201, {
        hostId,
        credential,
        dataCenterId: 'US-TX-3',
        cloud: 'SECURE',
        heartbeatMs: this.heartbeatMs,
        pollWaitMs: this.pollWaitMs,
      });
    }
    const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    const host = [...this.hosts.values()].find((h) => h.credential === bearer);
    if (!host) return problem(res, 401, 'UNAUTHORIZED', 'no host has this credential');
    if (host.revoked) return problem(res, 401, 'HOST_REVOKED', `host ${host.hostId} was revoked`);
    if (req.method === 'POST' && url.pathname === '/agent/v1/report') {
      const body = JSON.parse(text) as ReportRequest;
      this.reports.push({ hostId: host.hostId, body, at: Date.now() });
      const acked = new Set((body.acks ?? []).map((a) => a.opId));
      host.pending = host.pending.filter((op) => !acked.has(op.id));
      return json(res, 200, { now: Date.now(), refused: [] });
    }
    if (req.method === 'GET' && url.pathname === '/agent/v1/operations') {
      const after = Number(url.searchParams.get('after') ?? 0);
      const waitMs = Math.min(30_000, Number(url.searchParams.get('waitMs') ?? 0));
      this.polls.push({ hostId: host.hostId, after, waitMs });
      const ready = () => host.pending.filter((op) => op.seq > after);
      if (ready().length === 0) {
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            this.#waiters.delete(done);
            resolve();
          };
          const timer = setTimeout(done, waitMs);
          this.#waiters.add(done);
          res.once('close', done);
        });
      }
      if (res.destroyed) return;
      return json(res, 200, { operations: ready() });
    }
    return problem(res, 404, 'ROUTE_NOT_FOUND', `no route ${req.method} ${url.pathname}`);
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function problem(res: ServerResponse, status: number, code: string, detail: string): void {
  res.writeHead(status, { 'content-type': 'application/problem+json' });
  res.end(JSON.stringify({ type: 'about:blank', title: 'Error', status, code, detail }));
}
