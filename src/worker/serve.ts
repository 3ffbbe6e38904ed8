import { httpCaller, type CallInit, type CallResponse } from './http-call.js';
import { readWorkerEnv, withQuery, type WorkerEnv } from './worker-env.js';

/** A job as the platform hands it to a worker. Extra keys (webhook, s3Config, policy) pass through. */
export interface WorkerJob {
  id: string;
  input: unknown;
  [key: string]: unknown;
}

export interface JobContext {
  workerId: string;
  /** Aborted when the platform asks this job to stop (cancel, execution timeout) or the worker shuts down. */
  signal: AbortSignal;
  /** Sends a progress update; it becomes the job's visible `output` while it runs. */
  progress(update: unknown): Promise<void>;
  /** Asks the platform to recycle this worker after the job. */
  stopPod(): void;
}

/** A handler returns the output (or a promise of it), or yields chunks to stream them. */
export type Handler = (job: WorkerJob, context: JobContext) => unknown;

export interface ServeOptions {
  /** Jobs run at once; with more than one, jobs are taken in batches. @default 1 */
  concurrency?: number;
  /** Where the platform's variables come from. @default process.env */
  env?: Record<string, string | undefined>;
  /** For streaming handlers, send the list of all chunks as the final output. @default false */
  returnAggregateStream?: boolean;
  /** Stop taking jobs when aborted; in-flight jobs finish first. */
  signal?: AbortSignal;
  /** How long a graceful shutdown waits for in-flight jobs before aborting them. @default 30000 */
  shutdownGraceMs?: number;
  /** Install SIGTERM/SIGINT handlers that shut down gracefully. @default true */
  handleSignals?: boolean;
  log?: (message: string) => void;
  /**
   * How the worker pauses: after a refused or failed take, between job-stop polls, between
   * heartbeats and before retrying a result post (a test passes fake timers). @default real timers
   */
  timers?: WorkerTimers;
}

/** Waiting, as an option of {@link serve}. */
export interface WorkerTimers {
  /** Resolves after `ms`, or at once when `signal` aborts (it never rejects). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export interface WorkerHandle {
  readonly workerId: string;
  /** Stops taking jobs, lets in-flight jobs finish (up to the grace period), then resolves. */
  stop(): Promise<void>;
  /** Resolves when the worker has stopped. */
  readonly done: Promise<void>;
}

const VERSION = 'gantry-worker/0.1';
const realTimers: WorkerTimers = {
  /** Waits `ms`, or less when `signal` aborts; leaves no listener on `signal` behind. */
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const onAbort = () => (clearTimeout(timer), resolve());
      const timer = setTimeout(() => (signal?.removeEventListener('abort', onAbort), resolve()), ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

const isAsyncIterable = (v: unknown): v is AsyncIterable<unknown> =>
  typeof v === 'object' && v !== null && typeof (v as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function';

function describeError(err: unknown): string {
  const e = err instanceof Error ? err : new Error(String(err));
  return JSON.stringify({ error_type: e.name, error_message: e.message, error_traceback: e.stack ?? '' });
}

/**
 * Runs `handler` as a Gantry (and RunPod-compatible) queue worker: takes jobs by long-poll,
 * posts results, streams chunks, sends progress and heartbeats, honours the job-stop channel,
 * and shuts down gracefully.
 */
export function serve(handler: Handler, options: ServeOptions = {}): WorkerHandle {
  const env: WorkerEnv = readWorkerEnv(options.env ?? process.env);
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? 1));
  const log = options.log ?? (() => {});
  const timers = options.timers ?? realTimers;
  const sleep = (ms: number, signal?: AbortSignal): Promise<void> => timers.sleep(ms, signal);
  const stopping = new AbortController();
  const running = new Map<string, AbortController>();
  const headers = { authorization: env.apiKey, 'content-type': 'application/json' };
  let slotFreed: (() => void) | null = null;

  const http = httpCaller();
  const call = (url: string, init: CallInit = {}): Promise<CallResponse> =>
    http.call(url, { ...init, headers: { ...headers, ...init.headers } });

  /** Result posts are retried (3 attempts); the platform treats repeats as no-ops. */
  const post = async (url: string, body: unknown): Promise<void> => {
    const text = JSON.stringify(body);
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await call(url, { method: 'POST', body: text });
        await res.arrayBuffer();
        if (res.ok || res.status === 404 || attempt >= 3) return;
      } catch (err) {
        if (attempt >= 3) return log(`dropping a result post after 3 attempts: ${(err as Error).message}`);
      }
      await sleep(200 * attempt);
    }
  };

  const runJob = async (job: WorkerJob): Promise<void> => {
    const abort = new AbortController();
    running.set(job.id, abort);
    let stopPod = false;
    const context: JobContext = {
      workerId: env.workerId,
      signal: abort.signal,
      progress: (update) =>
        post(withQuery(env.doneUrl(job.id), { isStream: 'false' }), { status: 'IN_PROGRESS', output: update }),
      stopPod: () => void (stopPod = true),
    };
    const extra = () => (stopPod ? { stopPod: true } : {});
    try {
      const result = await handler(job, context);
      if (isAsyncIterable(result)) {
        const chunks: unknown[] = [];
        for await (const chunk of result) {
          if (abort.signal.aborted) return;
          if (options.returnAggregateStream) chunks.push(chunk);
          await post(withQuery(env.streamUrl(job.id), { isStream: 'false' }), { output: chunk });
        }
        if (abort.signal.aborted) return;
        await post(withQuery(env.doneUrl(job.id), { isStream: 'true' }), { output: chunks, ...extra() });
      } else {
        // A stopped job posts nothing: the platform has finalised it already.
        if (abort.signal.aborted) return;
        const isErrorObject = typeof result === 'object' && result !== null && 'error' in result;
        await post(
          withQuery(env.doneUrl(job.id), { isStream: 'false' }),
          isErrorObject ? { ...(result as object), ...extra() } : { output: result, ...extra() },
        );
      }
    } catch (err) {
      if (abort.signal.aborted) return;
      await post(withQuery(env.doneUrl(job.id), { isStream: 'false' }), { error: describeError(err), ...extra() });
    } finally {
      running.delete(job.id);
      slotFreed?.();
    }
  };

  const takeLoop = async (): Promise<void> => {
    while (!stopping.signal.aborted) {
      const free = concurrency - running.size;
      if (free <= 0) {
        await new Promise<void>((resolve) => (slotFreed = resolve));
        slotFreed = null;
        continue;
      }
      const batch = concurrency > 1;
      const url = batch
        ? withQuery(env.takeUrl.replace('/job-take/', '/job-take-batch/'), {
            job_in_progress: running.size > 0 ? 1 : 0,
            batch_size: free,
          })
        : withQuery(env.takeUrl, { job_in_progress: running.size > 0 ? 1 : 0 });
      let res: CallResponse;
      try {
        res = await call(url, { signal: stopping.signal });
      } catch (err) {
        if (stopping.signal.aborted) break;
        log(`job-take failed: ${(err as Error).message}; retrying`);
        await sleep(1000, stopping.signal);
        continue;
      }
      if (res.status === 200) {
        let body: WorkerJob | WorkerJob[] | null;
        try {
          body = (await res.json()) as WorkerJob | WorkerJob[] | null;
        } catch (err) {
          // A connection cut mid-body must not end the loop (and with it the worker).
          if (stopping.signal.aborted) break;
          log(`job-take reply unreadable: ${(err as Error).message}; retrying`);
          await sleep(1000, stopping.signal);
          continue;
        }
        const jobs = Array.isArray(body) ? body : body ? [body] : [];
        for (const job of jobs) if (job && typeof job.id === 'string') void runJob(job);
      } else {
        await res.arrayBuffer().catch(() => undefined);
        // 204 is "no job" after a full long-poll: poll again at once. A 400 also means no job
        // (wire-protocol §1), but this server sends it for a request it will refuse again (a bad
        // worker id, a load-balancing endpoint): wait, as for any other refusal, not spin.
        if (res.status === 429) await sleep(5000, stopping.signal);
        else if (res.status !== 204) await sleep(1000, stopping.signal);
      }
    }
  };

  const stopLoop = async (): Promise<void> => {
    while (!stopping.signal.aborted) {
      try {
        const res = await call(env.stopUrl, { signal: stopping.signal });
        if (res.status === 200) {
          const { jobsToStop = [] } = (await res.json()) as { jobsToStop?: string[] };
          for (const id of jobsToStop) running.get(id)?.abort(new Error('stopped by the platform'));
        } else {
          await res.arrayBuffer();
          if (res.status !== 204) await sleep(1000, stopping.signal);
        }
      } catch {
        if (stopping.signal.aborted) break;
        await sleep(1000, stopping.signal);
      }
    }
  };

  const pingLoop = async (): Promise<void> => {
    if (!env.pingUrl) return;
    while (!stopping.signal.aborted) {
      try {
        const res = await call(
          withQuery(env.pingUrl, { job_id: [...running.keys()].join(','), runpod_version: VERSION }),
          { signal: stopping.signal },
        );
        await res.arrayBuffer();
      } catch {
        // the next heartbeat tries again
      }
      await sleep(env.pingIntervalMs, stopping.signal);
    }
  };

  const loops = Promise.all([takeLoop(), stopLoop(), pingLoop()]);
  const done = (async () => {
    await new Promise<void>((resolve) => stopping.signal.addEventListener('abort', () => resolve(), { once: true }));
    const grace = options.shutdownGraceMs ?? 30_000;
    const deadline = Date.now() + grace;
    // The grace is real time (its deadline is read from the wall clock), whatever the pauses wait on.
    while (running.size > 0 && Date.now() < deadline) await realTimers.sleep(50);
    for (const abort of running.values()) abort.abort(new Error('worker shutting down'));
    await loops;
    http.close();
  })();

  const stop = async (): Promise<void> => {
    stopping.abort();
    slotFreed?.();
    await done;
  };
  options.signal?.addEventListener('abort', () => void stop(), { once: true });
  if (options.handleSignals ?? true) {
    const onSignal = () => void stop().then(() => process.exit(0));
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  }
  return { workerId: env.workerId, stop, done };
}
