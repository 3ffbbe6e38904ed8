import type { DownloadLimits } from './download-gate.js';
/** The agent protocol's timings (config file `fleet.heartbeatMs`, …; their meaning and defaults: docs/configuration.md). */
export interface AgentsConfig {
  heartbeatMs: number;
  heartbeatTimeoutMs: number;
  pollWaitMs: number;
  lostGraceMs: number;
  joinTokenTtlMs: number;
  /** The hosts' tunnels' bounds (config `fleet.tunnels`; docs/fleet.md "The tunnel"). */
  tunnels: TunnelLimits;
  /** The agent's public downloads at once (config `fleet.downloads`; src/fleet/download-gate.ts). */
  downloads: DownloadLimits;
}

/** A tunnel's bounds: the control plane's, handed to the agent with each tunnel it asks for. */
export interface TunnelLimits {
  maxStreams: number;
  maxTunnelsPerAgent: number;
  maxDialing: number;
  idleMs: number;
  maxWindowBytes: number;
}
