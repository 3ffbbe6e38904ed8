/** The serverless autoscaler's timings (config file `serverless.autoscaler`; their meaning and defaults: docs/configuration.md). */
export interface AutoscalerConfig {
  intervalMs: number;
  nudgeGapMs: number;
  crashWindowMs: number;
  crashThreshold: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  startTimeoutMs: number;
}
