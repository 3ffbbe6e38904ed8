/** Fixed-window request quotas per key over minute, hour and day windows (spec 8.2). */

type WindowName = 'minute' | 'hour' | 'day';
const WINDOWS: ReadonlyArray<{ name: WindowName; seconds: number }> = [
  { name: 'minute', seconds: 60 },
  { name: 'hour', seconds: 3600 },
  { name: 'day', seconds: 86_400 },
];

export type Quotas = Record<WindowName, number>;

export interface WindowCounters {
  /** start (ms) and count for each window, in WINDOWS order */
  starts: [number, number, number];
  counts: [number, number, number];
}

export interface Admission {
  allowed: boolean;
  /** remaining requests and seconds until reset, per window in WINDOWS order */
  remaining: [number, number, number];
  resetSeconds: [number, number, number];
  /** the first exceeded window, when refused */
  exceeded: WindowName | null;
  retryAfterSeconds: number;
}

export const newCounters = (): WindowCounters => ({ starts: [0, 0, 0], counts: [0, 0, 0] });

/**
 * Counts `units` requests (one, unless a single call carries several, like a GraphQL document's
 * root fields) against every window and says whether they are admitted, all or none. A refused
 * call is not counted, so a client that backs off regains its quota when the window resets.
 */
export function admit(counters: WindowCounters, quotas: Quotas, now: number, units = 1): Admission {
  const remaining: [number, number, number] = [0, 0, 0];
  const resetSeconds: [number, number, number] = [0, 0, 0];
  let exceeded: WindowName | null = null;
  let retryAfterSeconds = 0;
  for (let i = 0; i < 3; i++) {
    const { name, seconds } = WINDOWS[i]!;
    const span = seconds * 1000;
    const start = now - (now % span);
    if (counters.starts[i] !== start) {
      counters.starts[i] = start;
      counters.counts[i] = 0;
    }
    resetSeconds[i] = Math.max(1, Math.ceil((start + span - now) / 1000));
    if (exceeded === null && counters.counts[i]! + units > quotas[name]) {
      exceeded = name;
      retryAfterSeconds = resetSeconds[i]!;
    }
  }
  const allowed = exceeded === null;
  for (let i = 0; i < 3; i++) {
    if (allowed) counters.counts[i]! += units;
    remaining[i] = Math.max(0, quotas[WINDOWS[i]!.name] - counters.counts[i]!);
  }
  return { allowed, remaining, resetSeconds, exceeded, retryAfterSeconds };
}

/** `RateLimit` header value: `"minute";r=59;t=12, "hour";r=…;t=…, "day";r=…;t=…` */
export const rateLimitHeader = (a: Admission): string =>
  WINDOWS.map((w, i) => `"${w.name}";r=${a.remaining[i]};t=${a.resetSeconds[i]}`).join(', ');

/** `RateLimit-Policy` header value: `"minute";q=60;w=60, …` */
export const rateLimitPolicyHeader = (q: Quotas): string =>
  WINDOWS.map((w) => `"${w.name}";q=${q[w.name]};w=${w.seconds}`).join(', ');
