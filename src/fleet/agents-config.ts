/** The agent protocol's timings (config file `fleet.heartbeatMs`, …; their meaning and defaults: docs/configuration.md). */
export interface AgentsConfig {
  heartbeatMs: number;
  heartbeatTimeoutMs: number;
  pollWaitMs: number;
  lostGraceMs: number;
  joinTokenTtlMs: number;
}
