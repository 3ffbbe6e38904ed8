/**
 * Reads processes from Linux's /proc. Everything here answers null (or "unknown") elsewhere, so
 * the runtime degrades to "no stats" instead of failing on macOS.
 */
import { readdir, readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';

/** Linux's USER_HZ, the unit of utime/stime in /proc/<pid>/stat: 100 on every mainstream architecture (Node cannot ask sysconf). */
const CLOCK_TICKS_PER_SECOND = 100;

export interface ProcEntry {
  pid: number;
  /** process group id */
  pgid: number;
  /** one-letter state: R, S, D, Z (zombie), X (dead), … */
  state: string;
  /** utime + stime, in clock ticks */
  cpuTicks: number;
  rssBytes: number;
}

export const isLiveState = (state: string): boolean => state !== 'Z' && state !== 'X';

let pageSize: number | null = null;
/** The kernel page size; /proc reports rss in pages. Derived from Node's own rss (bytes) over its page count. */
function kernelPageSize(): number {
  if (pageSize !== null) return pageSize;
  pageSize = 4096;
  try {
    const pages = Number(readFileSync('/proc/self/statm', 'utf8').split(' ')[1]);
    const ratio = process.memoryUsage().rss / pages;
    if (Number.isFinite(ratio) && ratio > 0) pageSize = 2 ** Math.round(Math.log2(ratio));
  } catch {
    // keep 4096
  }
  return pageSize;
}

/** Parses one /proc/<pid>/stat line; the command name sits in parentheses and may itself hold spaces or parentheses. */
function parseStat(pid: number, text: string): ProcEntry | null {
  const close = text.lastIndexOf(')');
  if (close < 0) return null;
  const f = text.slice(close + 2).split(' ');
  // After the name: state(0) ppid(1) pgrp(2) … utime(11) stime(12) … rss(21)
  const pgid = Number(f[2]);
  const cpuTicks = Number(f[11]) + Number(f[12]);
  const rssPages = Number(f[21]);
  if (!Number.isFinite(pgid) || !Number.isFinite(cpuTicks) || !Number.isFinite(rssPages)) return null;
  return { pid, pgid, state: f[0] ?? '?', cpuTicks, rssBytes: rssPages * kernelPageSize() };
}

const hasProc = (() => {
  try {
    readFileSync('/proc/self/stat');
    return true;
  } catch {
    return false;
  }
})();

/** Whether process tables can be read here (Linux). */
export const procAvailable = (): boolean => hasProc;

let inFlight: { promise: Promise<ProcEntry[] | null>; startedAt: number } | null = null;
/** The scan that follows the one in flight, shared by the callers that could not join it. */
let queued: Promise<ProcEntry[] | null> | null = null;
let last: { at: number; entries: ProcEntry[] } | null = null;

/** Joins the scan in flight, or starts one. */
function scanNow(): Promise<ProcEntry[] | null> {
  if (inFlight) return inFlight.promise;
  const startedAt = performance.now();
  const promise = (async () => {
    try {
      const names = await readdir('/proc');
      const entries = await Promise.all(
        names.map(async (name) => {
          const pid = Number(name);
          if (!Number.isInteger(pid) || pid <= 0) return null;
          try {
            return parseStat(pid, await readFile(`/proc/${pid}/stat`, 'utf8'));
          } catch {
            return null; // exited between readdir and read
          }
        }),
      );
      const live = entries.filter((e): e is ProcEntry => e !== null);
      last = { at: performance.now(), entries: live };
      return live;
    } finally {
      inFlight = null;
    }
  })();
  inFlight = { promise, startedAt };
  return promise;
}

/**
 * Every process on the machine, or null without /proc. Callers that accept a slightly old table
 * (`maxAgeMs`) share the last one, or the scan in flight when it began within that age, so
 * `list()` over many instances and concurrent stops cost one walk of /proc rather than one each.
 * A caller that wants what runs now (`maxAgeMs` 0: an orphan check right after a spawn) never
 * joins a scan begun before its call, which may have missed that process: it waits for the next.
 */
export function scanProcesses(maxAgeMs = 0): Promise<ProcEntry[] | null> {
  if (!hasProc) return Promise.resolve(null);
  const now = performance.now();
  if (last && maxAgeMs > 0 && now - last.at <= maxAgeMs) return Promise.resolve(last.entries);
  if (!inFlight || (maxAgeMs > 0 && now - inFlight.startedAt <= maxAgeMs)) return scanNow();
  queued ??= inFlight.promise
    .catch(() => null)
    .then(() => {
      queued = null;
      return scanNow();
    });
  return queued;
}

export interface GroupUsage {
  /** live (non-zombie) members */
  members: number;
  cpuTicks: number;
  rssBytes: number;
}

/** What the live members of one process group use together. */
export function groupUsage(entries: readonly ProcEntry[], pgid: number): GroupUsage {
  const usage: GroupUsage = { members: 0, cpuTicks: 0, rssBytes: 0 };
  for (const e of entries) {
    if (e.pgid !== pgid || !isLiveState(e.state)) continue;
    usage.members++;
    usage.cpuTicks += e.cpuTicks;
    usage.rssBytes += e.rssBytes;
  }
  return usage;
}

/** The environment a process started with (NUL-separated `KEY=value` entries), or null when unreadable. */
export async function readEnviron(pid: number): Promise<string[] | null> {
  try {
    return (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0');
  } catch {
    return null;
  }
}

/** CPU time of a process group at a moment (`at`: performance.now() ms). */
export interface CpuSample {
  ticks: number;
  at: number;
}

const percent = (n: number): number => Math.round(Math.min(100, Math.max(0, n)) * 10) / 10;

/** Share of `vcpus` used between two samples, 0–100 (a member that died takes its ticks along: never below 0). */
export function cpuPercent(previous: CpuSample, next: CpuSample, vcpus: number): number {
  const elapsedSeconds = (next.at - previous.at) / 1000;
  if (elapsedSeconds <= 0) return 0;
  const cpuSeconds = Math.max(0, next.ticks - previous.ticks) / CLOCK_TICKS_PER_SECOND;
  return percent((cpuSeconds / elapsedSeconds / Math.max(vcpus, 1)) * 100);
}

/** Resident memory against the allotment, 0–100 (processes are not capped, so it saturates at 100). */
export const memoryPercent = (rssBytes: number, memoryGb: number): number =>
  memoryGb > 0 ? percent((rssBytes / (memoryGb * 1024 ** 3)) * 100) : 0;
