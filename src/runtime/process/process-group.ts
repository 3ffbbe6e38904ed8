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

/** Waits until the group is gone or `timeoutMs` passes; answers whether it is gone. `wake` (e.g. the leader's exit) checks early. */
async function waitGroupGone(pgid: number, timeoutMs: number, wake?: Promise<unknown>): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  let pause = 10;
  let woken = false;
  const markWoken = (): void => {
    woken = true;
  };
  wake?.then(markWoken, markWoken);
  for (;;) {
    if (!(await groupAlive(pgid))) return true;
    const left = deadline - performance.now();
    if (left <= 0) return false;
    const nap = sleep(Math.min(pause, left));
    await (wake && !woken ? Promise.race([nap, wake]) : nap);
    pause = Math.min(pause * 2, 100);
  }
}

/**
 * SIGTERM to the whole group, then SIGKILL to whatever is left after `graceMs`; resolves once no
 * member is alive (or, should a member be stuck in uninterruptible sleep, after a bounded wait).
 */
export async function terminateGroup(pgid: number, graceMs: number, leaderExited?: Promise<unknown>): Promise<void> {
  if (!signalGroup(pgid, 'SIGTERM')) return;
  if (await waitGroupGone(pgid, graceMs, leaderExited)) return;
  if (!signalGroup(pgid, 'SIGKILL')) return;
  await waitGroupGone(pgid, 5_000, leaderExited);
}
