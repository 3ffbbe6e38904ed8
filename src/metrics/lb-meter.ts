/**
 * Load-balancing endpoints' figures in `/metrics` (docs/metrics.md), by endpoint: requests by the
 * answer's status class, their duration, the requests workers hold now, and the waits for a ready
 * worker (a cold start) by how they ended. Only requests that passed the key check are counted,
 * so the endpoint label holds real endpoints only.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export interface LbMeterPort {
  /** A request ended: its status (0: none was sent) and seconds from its arrival. */
  request(endpointId: string, status: number, seconds: number): void;
  /** Requests a worker holds changed by `by`. */
  inFlight(endpointId: string, by: number): void;
  /** A request waited for a ready worker: `served` (one became ready), `timeout` or `gone` (the client left). */
  waited(endpointId: string, outcome: 'served' | 'timeout' | 'gone', seconds: number): void;
}

const statusClass = (status: number): string => (status === 0 ? 'none' : `${Math.floor(status / 100)}xx`);

export function lbMeter(registry: Registry): LbMeterPort {
  const registers = [registry];
  const requests = new Counter({
    name: 'gantry_lb_requests_total',
    help: "Requests to load-balancing endpoints, by endpoint id and the answer's status class (none: no answer was sent).",
    labelNames: ['endpoint', 'status'],
    registers,
  });
  const seconds = new Histogram({
    name: 'gantry_lb_request_duration_seconds',
    help: "Time from a request's arrival to its answer's end, waits for a worker included, by endpoint id.",
    labelNames: ['endpoint'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 330],
    registers,
  });
  const inFlight = new Gauge({
    name: 'gantry_lb_in_flight_requests',
    help: 'Requests to load-balancing endpoints that workers hold now, by endpoint id.',
    labelNames: ['endpoint'],
    registers,
  });
  const waits = new Histogram({
    name: 'gantry_lb_worker_wait_seconds',
    help: 'Waits of requests that found no ready worker (cold starts), by endpoint id and how they ended: served, timeout (answered 503), gone (the client left).',
    labelNames: ['endpoint', 'outcome'],
    buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers,
  });
  return {
    request(endpoint, status, s) {
      requests.inc({ endpoint, status: statusClass(status) });
      seconds.observe({ endpoint }, s);
    },
    inFlight(endpoint, by) {
      inFlight.inc({ endpoint }, by);
    },
    waited(endpoint, outcome, s) {
      waits.observe({ endpoint, outcome }, s);
    },
  };
}
