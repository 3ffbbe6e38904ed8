/**
 * `<instance dir>/output.log`: the process's stdout and stderr, kept for debugging. The child writes
 * to it directly (an O_APPEND descriptor, no pipe through the server), so a chatty process costs
 * the server nothing and its output survives a server crash. The size is capped by copy-truncate:
 * the file is copied to `output.log.1` and emptied in place, which the child's append-mode
 * descriptor follows without being reopened.
 */
import { copyFile, open, stat, truncate } from 'node:fs/promises';

/** @default 10 MiB */
export const DEFAULT_MAX_LOG_BYTES = 10 * 1024 * 1024;

/** Moves the log to `<path>.1` when it has grown past `maxBytes`; answers whether it did. */
export async function capLog(path: string, maxBytes: number): Promise<boolean> {
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch {
    return false;
  }
  if (size <= maxBytes) return false;
  await copyFile(path, `${path}.1`);
  await truncate(path, 0);
  return true;
}

/** Current size of the log, 0 when missing. */
export async function logSize(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0;
  }
}

/**
 * The last `lines` lines written since byte `fromOffset` (where this run's output began), at most
 * `maxBytes` characters, trailing blank lines dropped; '' when there is nothing.
 */
export async function readTail(
  path: string,
  fromOffset: number,
  { lines = 20, maxBytes = 2048 } = {},
): Promise<string> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch {
    return '';
  }
  try {
    const size = (await handle.stat()).size;
    // A copy-truncate since the run began moved the start of its output away.
    const start = Math.max(size < fromOffset ? 0 : fromOffset, size - 64 * 1024);
    const buffer = Buffer.alloc(size - start);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, start);
    const text = buffer.subarray(0, bytesRead).toString('utf8').replace(/\s+$/, '');
    if (text === '') return '';
    let tail = text.split('\n').slice(-lines).join('\n');
    if (tail.length > maxBytes) tail = `…${tail.slice(tail.length - maxBytes + 1)}`;
    return tail;
  } finally {
    await handle.close();
  }
}
