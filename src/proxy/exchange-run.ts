/**
 * A proxied exchange run on a connection of the pool (pod-connections.ts), the connection given
 * back or closed when it ends. A request met by the pod closing its kept-alive connection
 * (upstream-exchange.ts `stale`: no byte of an answer, no body, a method that changes nothing) goes
 * once more, on a new connection: a pod's server closes idle connections on its own clock (Node's
 * and uvicorn's after 5 s), and one closing just as a request is sent on it would otherwise be a 502.
 */
import type { PodConnection, PodConnections } from './pod-connections.js';
import { UpstreamExchange, type ExchangeSpec } from './upstream-exchange.js';

export type RunSpec = Omit<ExchangeSpec, 'finished' | 'stale'>;

/** Starts the exchange; `started` gets it (and the one sent again, if any), for `abort()`. */
export function runExchange(
  connections: PodConnections,
  conn: PodConnection,
  spec: RunSpec,
  started: (exchange: UpstreamExchange) => void,
): void {
  const exchange = new UpstreamExchange(conn, {
    ...spec,
    finished: (reusable) => (reusable ? connections.give(conn) : conn.destroy()),
    // called only for a reused connection (a new one is never stale): a request goes again once at most
    stale: () => void sendAgain(connections, conn, spec, started),
  });
  started(exchange);
  exchange.start();
}

async function sendAgain(
  connections: PodConnections,
  stale: PodConnection,
  spec: RunSpec,
  started: (exchange: UpstreamExchange) => void,
): Promise<void> {
  let fresh: PodConnection;
  try {
    fresh = await connections.take(stale.podId, stale.port, true);
  } catch (err) {
    return spec.failed(err instanceof Error ? err : new Error(String(err)));
  }
  const { res } = spec;
  // answered meanwhile (its time ran out) or the client left: the new connection was not used
  if (res.destroyed || res.writableEnded) return connections.give(fresh);
  runExchange(connections, fresh, spec, started);
}
