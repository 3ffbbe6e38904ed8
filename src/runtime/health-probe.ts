/**
 * Readiness probes for instances, shared by every runtime: an image's `health` (config `images`)
 * is probed on the host address that reaches the instance's port (the process runtime: the public
 * port on 127.0.0.1; a container runtime: the port it published). They run on real timers: this
 * is an adapter measuring a real process, not domain logic, so the injected clock (used for
 * timestamps) is not involved.
 */
import { request } from 'node:http';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ProbeTarget {
  type: 'http' | 'tcp';
  host: string;
  /** the host (public) port */
  port: number;
  /** http only */
  path: string;
}

export type ProbeResult = { ok: true } | { ok: false; aborted: boolean; lastError: string };

/** How the target reads in messages: `http://127.0.0.1:31000/health` or `tcp 127.0.0.1:31000`. */
export const describeTarget = (t: ProbeTarget): string =>
  t.type === 'http'
    ? `http://${t.host}:${t.port}${t.path.startsWith('/') ? t.path : `/${t.path}`}`
    : `tcp ${t.host}:${t.port}`;

/** One attempt: null on success (http: any status below 500; tcp: a connection), else what went wrong. */
export function probeOnce(target: ProbeTarget, timeoutMs: number): Promise<string | null> {
  return new Promise((resolve) => {
    if (target.type === 'tcp') {
      const socket = connect({ host: target.host, port: target.port });
      socket.setTimeout(timeoutMs, () => {
        socket.destroy();
        resolve(`no connection within ${timeoutMs} ms`);
      });
      socket.once('connect', () => {
        socket.destroy();
        resolve(null);
      });
      socket.once('error', (err) => resolve(err.message));
      return;
    }
    const req = request(
      {
        host: target.host,
        port: target.port,
        path: target.path.startsWith('/') ? target.path : `/${target.path}`,
        method: 'GET',
        agent: false,
        timeout: timeoutMs,
      },
      (res) => {
        res.resume();
        const status = res.statusCode ?? 0;
        resolve(status < 500 ? null : `answered HTTP ${status}`);
      },
    );
    req.once('timeout', () => {
      req.destroy();
      resolve(`no answer within ${timeoutMs} ms`);
    });
    req.once('error', (err) => resolve(err.message));
    req.end();
  });
}

/** How the probe loop reads time and waits: real by default; the loop's tests drive it on a manual clock. */
export interface ProbeTiming {
  /** a monotonic reading in ms */
  now: () => number;
  /** resolves after `ms`, rejects once `signal` aborts */
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
}

const realTiming: ProbeTiming = {
  now: () => performance.now(),
  sleep: (ms, signal) => sleep(ms, undefined, { signal }),
};

export interface WaitOptions {
  intervalMs: number;
  timeoutMs: number;
  signal: AbortSignal;
  /** @default real time */
  timing?: ProbeTiming;
  /** One attempt. @default {@link probeOnce} */
  probe?: (target: ProbeTarget, timeoutMs: number) => Promise<string | null>;
}

/**
 * Probes every `intervalMs` until an attempt succeeds, `timeoutMs` passes, or `signal` aborts.
 * An attempt never outlasts the remaining time, so a hanging server cannot stretch the timeout.
 * The error reported is the last attempt's, unless that attempt was only cut short by the
 * deadline ("no answer within 3 ms" says less than the "connection refused" before it).
 */
export async function waitUntilHealthy(target: ProbeTarget, options: WaitOptions): Promise<ProbeResult> {
  const { now, sleep: wait } = options.timing ?? realTiming;
  const probe = options.probe ?? probeOnce;
  const attemptMs = Math.max(options.intervalMs, 1_000);
  const deadline = now() + options.timeoutMs;
  let lastError: string | null = null;
  const failed = (aborted: boolean): ProbeResult => ({
    ok: false,
    aborted,
    lastError: lastError ?? 'no attempt finished',
  });
  for (;;) {
    if (options.signal.aborted) return failed(true);
    const left = deadline - now();
    if (left <= 0) return failed(false);
    const timeoutMs = Math.max(1, Math.min(left, attemptMs));
    const error = await probe(target, timeoutMs);
    if (error === null) return options.signal.aborted ? failed(true) : { ok: true };
    if (lastError === null || timeoutMs === attemptMs || now() < deadline) lastError = error;
    const pause = Math.min(options.intervalMs, deadline - now());
    if (pause > 0) {
      try {
        await wait(pause, options.signal);
      } catch {
        return failed(true);
      }
    }
  }
}
