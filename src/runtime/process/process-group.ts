/**
 * Signals and waits for whole process groups. Every instance is spawned as the leader of its own
 * group (`detached: true`), so its pid is also the group id, and whatever it forks stays in the
 * group unless it deliberately leaves with setsid.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { groupUsage, scanProcesses } from './proc-stats.js';

/** Sends `signal` to every member of the group; false when the group no longer exists. */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ESRCH') return false;
    // EPERM: the group exists but is not ours to signal (pid reuse); treat it as gone for us.
    if (code === 'EPERM') return false;
    throw err;
  }
}

/**
 * Whether any member of the group is still alive. kill(-pgid, 0) alone is not enough: orphaned
 * members that exited stay zombies (still in the group) when PID 1 does not reap, as in many
 * containers, so on Linux the group's members are looked up in /proc and zombies do not count.
 */
async function groupAlive(pgid: number): Promise<boolean> {
  if (!signalGroup(pgid, 0)) return false;
  const entries = await scanProcesses();
  if (entries === null) return true;
  return groupUsage(entries, pgid).members > 0;
}

/**
 * How the SIGTERM → SIGKILL grace is waited: resolves once `ms` have passed, rejects once `signal`
 * aborts (the group went first). Real timers by default; tests wrap them to see who ended the grace.
 */
export type GraceTimer = (ms: number, signal: AbortSignal) => Promise<void>;

/** The grace on real timers (what a running server uses; the tests watch it through a wrapper). */
export const realGraceTimer: GraceTimer = (ms, signal) => sleep(ms, undefined, { signal });

/** Waits until the group is gone or `timeoutMs` passes on `timer`; answers whether it is gone. `wake` (e.g. the leader's exit) checks early. */
async function waitGroupGone(
  pgid: number,
  timeoutMs: number,
  wake: Promise<unknown> | undefined,
  timer: GraceTimer,
): Promise<boolean> {
  let pause = 10;
  let woken = false;
  let over = false;
  const markWoken = (): void => {
    woken = true;
  };
  wake?.then(markWoken, markWoken);
  // Cancelled once the wait is over: a pending timer would hold the event loop for the whole grace.
  const cancel = new AbortController();
  const expired = timer(timeoutMs, cancel.signal).then(
    () => {
      over = true;
    },
    () => undefined,
  );
  try {
    for (;;) {
      if (!(await groupAlive(pgid))) return true;
      if (over) return false;
      const nap = sleep(pause);
      await Promise.race(wake && !woken ? [nap, expired, wake] : [nap, expired]);
      pause = Math.min(pause * 2, 100);
    }
  } finally {
    cancel.abort();
  }
}

/**
 * SIGTERM to the whole group, then SIGKILL to whatever is left after `graceMs` (waited on
 * `graceTimer`); resolves once no member is alive (or, should a member be stuck in uninterruptible
 * sleep, after a bounded wait).
 */
export async function terminateGroup(
  pgid: number,
  graceMs: number,
  leaderExited?: Promise<unknown>,
  graceTimer: GraceTimer = realGraceTimer,
): Promise<void> {
  if (!signalGroup(pgid, 'SIGTERM')) return;
  // A suspended (SIGSTOPped) group sees its SIGTERM only once continued.
  signalGroup(pgid, 'SIGCONT');
  if (await waitGroupGone(pgid, graceMs, leaderExited, graceTimer)) return;
  if (!signalGroup(pgid, 'SIGKILL')) return;
  await waitGroupGone(pgid, 5_000, leaderExited, realGraceTimer);
}
