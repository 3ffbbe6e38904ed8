/**
 * Leftovers of a previous server. Each process instance records its pid (= its process group id)
 * in `<dataDir>/instances/<id>/pid`; a server that crashed or was killed leaves those groups
 * running. Before a group is killed we make sure it still is ours — pids get reused — by finding
 * `GANTRY_INSTANCE_ID=<id>` in the environment of one of its live members (/proc/<pid>/environ).
 * Without /proc (not Linux) nothing can be verified, so nothing is killed.
 */
import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { terminateGroup } from './process-group.js';
import { isLiveState, readEnviron, scanProcesses } from './proc-stats.js';

export const instanceDirOf = (dataDir: string, id: string): string => join(dataDir, 'instances', id);
const pidFileOf = (dataDir: string, id: string): string => join(instanceDirOf(dataDir, id), 'pid');

export async function writePidFile(dataDir: string, id: string, pid: number): Promise<void> {
  await writeFile(pidFileOf(dataDir, id), `${pid}\n`, { mode: 0o600 });
}

export async function removePidFile(dataDir: string, id: string): Promise<void> {
  await rm(pidFileOf(dataDir, id), { force: true });
}

/** Whether process group `pgid` has a live member started as instance `id`. */
async function groupBelongsTo(pgid: number, id: string): Promise<boolean> {
  const entries = await scanProcesses();
  if (entries === null) return false;
  const marker = `GANTRY_INSTANCE_ID=${id}`;
  for (const e of entries) {
    if (e.pgid !== pgid || !isLiveState(e.state)) continue;
    if ((await readEnviron(e.pid))?.includes(marker)) return true;
  }
  return false;
}

export interface ReapOptions {
  /** SIGTERM → SIGKILL grace */
  graceMs: number;
}

/**
 * Kills the process group a previous server left behind for instance `id`, if its pid file names
 * one that is still ours, and removes the pid file. Answers whether something was killed.
 */
export async function reapOrphan(dataDir: string, id: string, { graceMs }: ReapOptions): Promise<boolean> {
  let text: string;
  try {
    text = await readFile(pidFileOf(dataDir, id), 'utf8');
  } catch {
    return false;
  }
  const pgid = Number(text.trim());
  let killed = false;
  if (Number.isInteger(pgid) && pgid > 1 && (await groupBelongsTo(pgid, id))) {
    await terminateGroup(pgid, graceMs);
    killed = true;
  }
  await removePidFile(dataDir, id);
  return killed;
}

/** {@link reapOrphan} for every instance folder under `<dataDir>/instances`; answers the ids whose leftovers were killed. */
export async function reapOrphans(
  dataDir: string,
  options: ReapOptions,
  include: (id: string) => boolean = () => true,
): Promise<string[]> {
  let ids: string[];
  try {
    ids = (await readdir(join(dataDir, 'instances'))).filter(include);
  } catch {
    return [];
  }
  const killed = await Promise.all(ids.map(async (id) => ((await reapOrphan(dataDir, id, options)) ? id : null)));
  return killed.filter((id): id is string => id !== null);
}
