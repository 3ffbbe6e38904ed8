/**
 * Where a load-balancing endpoint's worker listens, from the env its endpoint gives it (the
 * template's overlaid with the endpoint's), as the platform reads it: `PORT` (default 80) takes
 * the requests, `PORT_HEALTH` (default `PORT`) answers `HEALTH_CHECK_PATH` (default `/ping`).
 */
import type { Endpoint } from '../domain/endpoint.js';
import type { Template } from '../domain/template.js';

export interface LbWorkerPorts {
  port: number;
  healthPort: number;
  healthPath: string;
}

const DEFAULT_PORT = 80;
const DEFAULT_HEALTH_PATH = '/ping';

const portOf = (value: string | undefined): number | null => {
  if (value === undefined || !/^\d{1,5}$/.test(value.trim())) return null;
  const n = Number(value.trim());
  return n >= 1 && n <= 65_535 ? n : null;
};

/** The ports and health path of the endpoint's workers (a value that is not a port takes the default). */
export function lbWorkerPorts(endpoint: Pick<Endpoint, 'env'>, template: Pick<Template, 'env'> | null): LbWorkerPorts {
  const env = { ...(template?.env ?? {}), ...endpoint.env };
  const port = portOf(env.PORT) ?? DEFAULT_PORT;
  const healthPort = portOf(env.PORT_HEALTH) ?? port;
  const raw = env.HEALTH_CHECK_PATH?.trim() ?? '';
  const path = raw.startsWith('/') ? raw : `/${raw}`;
  // a path a request line can carry as is (no spaces, controls or non-ASCII)
  const healthPath = raw !== '' && /^\/[\x21-\x7e]{0,1023}$/.test(path) ? path : DEFAULT_HEALTH_PATH;
  return { port, healthPort, healthPath };
}

/** The distinct ports a worker listens on: the application's, then the health one when it differs. */
export const lbListenPorts = (p: LbWorkerPorts): number[] =>
  p.healthPort === p.port ? [p.port] : [p.port, p.healthPort];

/**
 * A worker's host ports by private port, from the host ports its launch recorded in the order of
 * `lbListenPorts` (the application's, then the health one's); {} when none were recorded.
 */
export function lbHostPorts(p: LbWorkerPorts, publicPorts: readonly number[]): Record<number, number> {
  const out: Record<number, number> = {};
  lbListenPorts(p).forEach((port, i) => {
    const host = publicPorts[i];
    if (host !== undefined) out[port] = host;
  });
  return out;
}
