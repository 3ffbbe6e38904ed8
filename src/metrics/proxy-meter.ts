/**
 * The pod HTTP proxy's figures in `/metrics` (docs/metrics.md): exchanges by kind and status
 * class, bytes each way, and the exchanges open now. Labels are bounded (no pod or account).
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export interface ProxyMeterPort {
  exchange(kind: 'http' | 'upgrade', status: number, bytesIn: number, bytesOut: number): void;
  open(by: number): void;
}

const statusClass = (status: number): string => (status === 0 ? 'none' : `${Math.floor(status / 100)}xx`);

export function proxyMeter(registry: Registry): ProxyMeterPort {
  const registers = [registry];
  const exchanges = new Counter({
    name: 'gantry_proxy_exchanges_total',
    help: "Exchanges through the pod HTTP proxy (a request and its answer, or a WebSocket), by kind and the answer's status class (none: no answer was sent).",
    labelNames: ['kind', 'status'],
    registers,
  });
  const bytes = new Counter({
    name: 'gantry_proxy_bytes_total',
    help: 'Bytes through the pod HTTP proxy: `in` from clients to pods (request bodies, WebSocket bytes), `out` to clients (answers with their heads, WebSocket bytes).',
    labelNames: ['direction'],
    registers,
  });
  const open = new Gauge({
    name: 'gantry_proxy_open_exchanges',
    help: 'Exchanges through the pod HTTP proxy under way now (requests awaiting or streaming their answer, open WebSockets).',
    registers,
  });
  const inBytes = bytes.labels({ direction: 'in' });
  const outBytes = bytes.labels({ direction: 'out' });
  return {
    exchange(kind, status, bytesIn, bytesOut) {
      exchanges.inc({ kind, status: statusClass(status) });
      if (bytesIn > 0) inBytes.inc(bytesIn);
      if (bytesOut > 0) outBytes.inc(bytesOut);
    },
    open(by) {
      open.inc(by);
    },
  };
}
