import { Counter, Gauge, type Registry } from 'prom-client';
import type { TunnelCounts } from '../fleet/fleet-tunnels.js';
import { TUNNEL_PROTOCOL_REASONS } from '../fleet/tunnel-frames.js';

/** What the collectors read at scrape time: in-memory state the services keep current. */
export interface MetricsSources {
  /** Launched workers by state, as of the autoscaler's last pass per endpoint. */
  workers(): Record<string, number>;
  /** What the autoscaler's passes decided since start. */
  decisions(): {
    passes: number;
    starts: number;
    stops: Record<string, number>;
    heldBack: number;
    throttled: number;
    /** FlashBoot: idle workers suspended, suspended workers resumed. @default 0 */
    suspends?: number;
    resumes?: number;
  };
  /** GPUs per host: total and reserved. */
  gpus(): Array<{ hostId: string; gpuTypeId: string | null; total: number; used: number; available: boolean }>;
  /** Webhook attempts by outcome since start, and calls in flight. */
  webhooks(): { delivered: number; retrying: number; failed: number; inFlight: number };
  /** The agents' tunnels open on this replica and the streams they carry (runtime fleet); null otherwise. */
  tunnels?(): TunnelCounts | null;
}

/**
 * The collectors read at scrape time from `source()` (null until the services are wired:
 * nothing is reported then): launched workers, the autoscaler's decisions, hosts' GPUs, webhooks.
 */
export function registerSourceGauges(registers: Registry[], source: () => MetricsSources | null): void {
  new Gauge({
    name: 'gantry_workers',
    help: "Serverless workers the platform launched, by state, as of the autoscaler's last pass.",
    labelNames: ['state'],
    registers,
    collect() {
      const s = source();
      if (!s) return;
      for (const [state, n] of Object.entries(s.workers())) this.set({ state }, n);
    },
  });
  const decision = (name: string, help: string, read: (d: ReturnType<MetricsSources['decisions']>) => number) =>
    new Counter({
      name,
      help,
      registers,
      collect() {
        const s = source();
        if (!s) return;
        this.reset();
        this.inc(read(s.decisions()));
      },
    });
  decision('gantry_autoscaler_passes_total', 'Endpoint passes the autoscaler made.', (d) => d.passes);
  decision('gantry_autoscaler_worker_starts_total', 'Workers the autoscaler decided to launch.', (d) => d.starts);
  decision(
    'gantry_autoscaler_held_back_total',
    'Launches held back because the endpoint was crash-looping (summed over passes).',
    (d) => d.heldBack,
  );
  decision(
    'gantry_autoscaler_throttled_total',
    'Launches that found no capacity (summed over passes).',
    (d) => d.throttled,
  );
  decision(
    'gantry_autoscaler_worker_suspends_total',
    'Idle workers of FlashBoot endpoints the autoscaler suspended instead of stopping.',
    (d) => d.suspends ?? 0,
  );
  decision(
    'gantry_autoscaler_worker_resumes_total',
    'Suspended workers the autoscaler resumed for demand (instead of launching).',
    (d) => d.resumes ?? 0,
  );
  new Counter({
    name: 'gantry_autoscaler_worker_stops_total',
    help: 'Workers the autoscaler decided to stop, by reason (idle, over-max, recycle, start-timeout).',
    labelNames: ['reason'],
    registers,
    collect() {
      const s = source();
      if (!s) return;
      this.reset();
      for (const [reason, n] of Object.entries(s.decisions().stops)) this.inc({ reason }, n);
    },
  });

  new Counter({
    name: 'gantry_webhook_deliveries_total',
    help: 'Webhook attempts recorded, by outcome: delivered, retrying (failed, tried again later), failed (no attempts left).',
    labelNames: ['outcome'],
    registers,
    collect() {
      const s = source();
      if (!s) return;
      this.reset();
      const w = s.webhooks();
      for (const outcome of ['delivered', 'retrying', 'failed'] as const) this.inc({ outcome }, w[outcome]);
    },
  });
  new Gauge({
    name: 'gantry_webhook_calls_in_flight',
    help: 'Webhook calls in flight now.',
    registers,
    collect() {
      const s = source();
      if (s) this.set(s.webhooks().inFlight);
    },
  });
  const hostGauge = (name: string, help: string, read: (h: ReturnType<MetricsSources['gpus']>[number]) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['host', 'gpu_type'],
      registers,
      collect() {
        const s = source();
        if (!s) return;
        this.reset();
        for (const h of s.gpus()) this.set({ host: h.hostId, gpu_type: h.gpuTypeId ?? 'cpu' }, read(h));
      },
    });
  hostGauge('gantry_host_gpus', 'GPUs a host has.', (h) => h.total);
  hostGauge('gantry_host_gpus_allocated', 'GPUs reserved on a host by pods and workers.', (h) => h.used);
  const tunnelGauge = (name: string, help: string, read: (t: { tunnels: number; streams: number }) => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        const t = source()?.tunnels?.();
        if (t) this.set(read(t));
      },
    });
  tunnelGauge(
    'gantry_fleet_tunnels_open',
    "Agents' tunnels open to this replica (runtime fleet): the pod proxy's way to their hosts' pods.",
    (t) => t.tunnels,
  );
  tunnelGauge(
    'gantry_fleet_tunnel_streams_open',
    "Connections to pods' ports carried by the agents' tunnels of this replica now (runtime fleet).",
    (t) => t.streams,
  );
  new Counter({
    name: 'gantry_fleet_tunnel_protocol_errors_total',
    help: "Agents' tunnels this replica ended because the agent broke the tunnel's protocol (runtime fleet), by why: malformed, credit, stream or direction.",
    labelNames: ['reason'],
    registers,
    collect() {
      const t = source()?.tunnels?.();
      if (!t) return;
      this.reset();
      for (const reason of TUNNEL_PROTOCOL_REASONS) this.inc({ reason }, t.protocolErrors[reason] ?? 0);
    },
  });
  hostGauge('gantry_host_available', 'Whether placement uses the host now (1) or it is unreachable (0).', (h) =>
    h.available ? 1 : 0,
  );
}
