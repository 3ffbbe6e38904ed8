import { randomUUID } from 'node:crypto';
/**
 * The environment a worker receives from the platform (wire-protocol §1), compiled once into the
 * URLs the worker calls. Placeholders: `$ID` is the worker id in the take URL and the job id in
 * the result/stream URLs; `$RUNPOD_POD_ID` is the worker id.
 */
export interface WorkerEnv {
  workerId: string;
  apiKey: string;
  takeUrl: string;
  /** `${jobId}` is filled per job */
  doneUrl: (jobId: string) => string;
  streamUrl: (jobId: string) => string;
  stopUrl: string;
  pingUrl: string | null;
  pingIntervalMs: number;
}

export class WorkerEnvError extends Error {}

export function readWorkerEnv(env: Record<string, string | undefined>): WorkerEnv {
  const need = (name: string): string => {
    const v = env[name];
    if (!v)
      throw new WorkerEnvError(
        `${name} is not set: run this worker under Gantry, or export the variables \`gantry worker env <endpoint>\` prints`,
      );
    return v;
  };
  // a worker attached by hand without an id gets its own: a shared default would let two such
  // workers take each other's stop notices
  const workerId = env.RUNPOD_POD_ID || `local-${randomUUID().slice(0, 13)}`;
  const take = need('RUNPOD_WEBHOOK_GET_JOB').replaceAll('$ID', workerId).replaceAll('$RUNPOD_POD_ID', workerId);
  const done = need('RUNPOD_WEBHOOK_POST_OUTPUT');
  const stream = env.RUNPOD_WEBHOOK_POST_STREAM ?? done.replace('/job-done/', '/job-stream/');
  const fill = (template: string) => (jobId: string) =>
    template.replaceAll('$RUNPOD_POD_ID', workerId).replaceAll('$ID', jobId);
  const ping = env.RUNPOD_WEBHOOK_PING
    ? env.RUNPOD_WEBHOOK_PING.replaceAll('$RUNPOD_POD_ID', workerId).replaceAll('$ID', workerId)
    : null;
  const interval = Number(env.RUNPOD_PING_INTERVAL ?? 10_000);
  return {
    workerId,
    apiKey: need('RUNPOD_AI_API_KEY'),
    takeUrl: take,
    doneUrl: fill(done),
    streamUrl: fill(stream),
    stopUrl: take.replace('/job-take/', '/job-stop/'),
    pingUrl: ping,
    pingIntervalMs: Number.isFinite(interval) && interval > 0 ? interval : 10_000,
  };
}

/** Appends query parameters the way the platform's URLs expect (they may already carry a `?`). */
export function withQuery(url: string, params: Record<string, string | number>): string {
  const query = new URLSearchParams(
    Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]),
  ).toString();
  if (!query) return url;
  return url + (url.includes('?') ? '&' : '?') + query;
}
