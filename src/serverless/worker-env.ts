/**
 * The environment the platform hands a worker (wire-protocol §1): where to take jobs, post
 * results and stream chunks, where to ping, and with which key. Used by `gantry worker env` for
 * workers attached by hand and by the autoscaler for the workers it launches.
 */
export interface WorkerEnvironmentInput {
  /** Base URL workers reach this server at (no trailing slash needed). */
  publicUrl: string;
  endpointId: string;
  workerId: string;
  /** A write key of the endpoint's account. */
  apiKey: string;
  /** GPU type the worker runs on, informational (`?gpu=`). @default "CPU" */
  gpuType?: string;
  /** @default 10000 */
  pingIntervalMs?: number;
}

/**
 * The variables, by name. URLs that the worker SDKs extend with `&key=value` already carry a `?`;
 * `$ID` (job id, or worker id in the take URL) and `$RUNPOD_POD_ID` are left for the SDK to fill.
 */
export function workerEnvironment(input: WorkerEnvironmentInput): Record<string, string> {
  const base = `${input.publicUrl.replace(/\/+$/, '')}/v2/${encodeURIComponent(input.endpointId)}`;
  const gpu = new URLSearchParams({ gpu: input.gpuType ?? 'CPU' }).toString();
  return {
    RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/$ID?${gpu}`,
    RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/$RUNPOD_POD_ID/$ID?${gpu}`,
    RUNPOD_WEBHOOK_POST_STREAM: `${base}/job-stream/$RUNPOD_POD_ID/$ID?${gpu}`,
    RUNPOD_WEBHOOK_PING: `${base}/ping/$RUNPOD_POD_ID`,
    RUNPOD_PING_INTERVAL: String(input.pingIntervalMs ?? 10_000),
    RUNPOD_AI_API_KEY: input.apiKey,
    RUNPOD_POD_ID: input.workerId,
    RUNPOD_ENDPOINT_ID: input.endpointId,
    RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: 'true',
    RUNPOD_SKIP_GPU_CHECK: 'true',
  };
}

/** Single-quotes a value for a POSIX shell (so `$ID` stays literal). */
const shellQuote = (value: string): string => `'${value.replace(/'/g, `'\\''`)}'`;

/** `export NAME='value'` lines, one per variable. */
export const exportLines = (env: Record<string, string>): string =>
  Object.entries(env)
    .map(([k, v]) => `export ${k}=${shellQuote(v)}`)
    .join('\n');
