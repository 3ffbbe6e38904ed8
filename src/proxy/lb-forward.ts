/**
 * One request of a load-balancing endpoint forwarded to the worker it was leased to
 * (docs/load-balancing.md), over a raw keep-alive connection to the worker's port, as the pod
 * proxy forwards (upstream-exchange.ts): no `ClientRequest`, no `Agent`, the answer's body written
 * straight to the client's socket. The balancer's own rules on top:
 * - a connection that cannot be made means nothing of the request left, so the request may go whole
 *   to another worker (`again`); once a byte was written it is never sent again, whatever happens;
 * - an answer not begun within `processingTimeoutMs` is 504;
 * - a body sent without its length that grows past `maxPayloadBytes` cuts the worker's request and
 *   answers 413 (one announced as larger never got here: lb-proxy.ts refuses it first);
 * - every answer of a worker carries `X-Runpod-Worker-Id`, the worker's own header of that name replaced.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { ApiError } from '../domain/errors.js';
import type { Endpoint } from '../domain/endpoint.js';
import { DialTimeout } from '../runtime/dial.js';
import type { LbLease } from '../serverless/lb-pool.js';
import type { LbSettings } from '../transport/proxy-settings.js';
import { tooLarge, type LbRoute } from './lb-route.js';
import type { PodConnection, PodConnections } from './pod-connections.js';
import { sendProblem } from './proxy-problem.js';
import type { UpstreamExchange } from './upstream-exchange.js';
import { runExchange } from './exchange-run.js';

/** What the balancer counts, for `/metrics` (src/metrics/lb-meter.ts). */
export interface LbMeter {
  request(endpointId: string, status: number, seconds: number): void;
  inFlight(endpointId: string, by: number): void;
  waited(endpointId: string, outcome: 'served' | 'timeout' | 'gone', seconds: number): void;
}

export interface WorkerForward {
  req: IncomingMessage;
  res: ServerResponse;
  route: LbRoute;
  endpoint: Endpoint;
  lease: LbLease;
  /** counts the request's outcome once it is over */
  counted(status: number): void;
  connections: PodConnections;
  /** the request's headers for the worker (proxy-headers.ts `requestHeaders`, the key dropped) */
  headers: OutgoingHttpHeaders;
  idleTimeoutMs: number;
  limits: Pick<LbSettings, 'processingTimeoutMs' | 'maxPayloadBytes'>;
  meter: LbMeter | null;
  /** offers the request to another worker, when one more attempt is allowed */
  again: (() => Promise<void>) | null;
}

export async function forwardToWorker(f: WorkerForward): Promise<void> {
  const { req, res, endpoint, lease, meter, limits } = f;
  const workerId = lease.workerId;
  meter?.inFlight(endpoint.id, 1);
  let status = 0;
  let bytesIn = 0;
  let over = false;
  let exchange: UpstreamExchange | null = null;
  let conn: PodConnection | null = null;
  const fail = (err: Error): void => {
    if (res.headersSent) return void res.destroy();
    const timeout = err instanceof DialTimeout;
    status = timeout ? 504 : 502;
    // never sent again to another worker: the request may have reached this one
    sendProblem(
      res,
      new ApiError(
        timeout ? 'UPSTREAM_TIMEOUT' : 'UPSTREAM_UNAVAILABLE',
        `Worker "${workerId}" of endpoint "${endpoint.id}": ${err.message}. The request was not retried.`,
      ),
      workerId,
    );
  };
  const answerTimer = setTimeout(() => {
    exchange?.abort();
    conn?.destroy();
    fail(
      new DialTimeout(
        `it did not begin its answer within ${limits.processingTimeoutMs} ms (proxy.loadBalancer.processingTimeoutMs)`,
      ),
    );
  }, limits.processingTimeoutMs);
  const closed = (): void => {
    if (over) return;
    over = true;
    clearTimeout(answerTimer);
    lease.release();
    meter?.inFlight(endpoint.id, -1);
    f.counted(status);
    if (!res.writableFinished) exchange?.abort();
  };
  res.once('close', closed);
  try {
    conn = await f.connections.take(workerId, lease.port);
  } catch (err) {
    const failure = err instanceof Error ? err : new Error(String(err));
    if (res.destroyed || res.writableEnded) return;
    if (f.again && !res.headersSent) {
      // the lease is handed back unreachable, not released: its worker is unhealthy until a check says otherwise
      over = true;
      clearTimeout(answerTimer);
      res.off('close', closed);
      meter?.inFlight(endpoint.id, -1);
      lease.unreachable(failure.message);
      return f.again();
    }
    req.resume();
    return fail(failure);
  }
  if (res.destroyed || res.writableEnded) {
    // answered meanwhile (the answer's time ran out) or the client left: the connection was not used
    f.connections.give(conn);
    return;
  }
  runExchange(
    f.connections,
    conn,
    {
      req,
      res,
      path: f.route.path,
      headers: f.headers,
      prefix: f.route.prefix,
      idleTimeoutMs: f.idleTimeoutMs,
      setHeaders: { 'X-Runpod-Worker-Id': workerId },
      bytesIn: (n) => {
        bytesIn += n;
        if (bytesIn <= limits.maxPayloadBytes || status !== 0) return;
        // a body sent without its length that grows past the cap: the worker's request is cut
        status = 413;
        exchange!.abort();
        res.shouldKeepAlive = false;
        sendProblem(res, tooLarge(limits.maxPayloadBytes));
      },
      head: (code) => {
        clearTimeout(answerTimer);
        status = code;
      },
      failed: (err) => {
        clearTimeout(answerTimer);
        if (!('refused' in err)) return fail(err);
        status = 502;
        sendProblem(
          res,
          new ApiError(
            'UPSTREAM_UNAVAILABLE',
            `Worker "${workerId}" sent an answer that cannot be passed on (${err.refused}).`,
          ),
          workerId,
        );
      },
    },
    (started) => (exchange = started),
  );
}
