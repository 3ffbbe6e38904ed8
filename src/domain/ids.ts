import { randomFillSync } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

// Random bytes are drawn from the CSPRNG a pool at a time: one `randomBytes` call per id cost
// ~6% of the server's CPU on `/run` (two ids per job).
const POOL_SIZE = 4096;
const pool = Buffer.allocUnsafe(POOL_SIZE);
let poolOffset = POOL_SIZE;

/** 256 byte values → ASCII alphabet codes; 252..255 map to 0 (rejected, see below). */
const CODES = Uint8Array.from({ length: 256 }, (_, b) => (b < 252 ? ALPHABET.charCodeAt(b % 36) : 0));
const scratch = Buffer.allocUnsafe(64);

/** Opaque lowercase alphanumeric id. 14 chars ≈ 72 bits; job ids use more so they cannot be guessed. */
export function newId(length = 14): string {
  if (length > scratch.length) return newId(scratch.length) + newId(length - scratch.length);
  let n = 0;
  while (n < length) {
    if (poolOffset === POOL_SIZE) {
      randomFillSync(pool);
      poolOffset = 0;
    }
    // 252 = 7 * 36: the tail is rejected to keep the distribution uniform
    const code = CODES[pool[poolOffset++]!]!;
    if (code !== 0) scratch[n++] = code;
  }
  return scratch.toString('latin1', 0, length);
}

/**
 * Job ids are unguessable (25 random characters ≈ 129 bits) and start with the submission time
 * (milliseconds, base 36, 8 characters until the year 2059), so ids issued together sort
 * together: each group commit appends to the primary-key index instead of dirtying a random leaf
 * page per job (random ids made the commit write ~50 index pages per batch of 50 jobs).
 */
export const newJobId = (now: number = Date.now()): string => `${now.toString(36).padStart(8, '0')}-${newId(25)}`;

let sortableMs = -1;
const sortableIssued = new Set<string>();

/**
 * A 14-character id like `newId()` whose first 8 characters are the time (milliseconds, base
 * 36), for rows written at a high rate: ids issued together sort together, so inserting them
 * appends to the primary-key index instead of dirtying a random page of it per row (pod creates
 * spent a fifth of their time committing such pages). The 6 random characters never repeat
 * within a millisecond in this process.
 */
export function newSortableId(now: number = Date.now()): string {
  const prefix = Math.max(0, Math.floor(now)).toString(36).padStart(8, '0');
  if (now !== sortableMs) {
    sortableMs = now;
    sortableIssued.clear();
  }
  for (;;) {
    const id = prefix + newId(6);
    if (sortableIssued.has(id)) continue;
    sortableIssued.add(id);
    return id;
  }
}

/** Ids accepted on paths: what we issue, plus some slack for ids issued by other systems. */
export const ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$';
const idRegex = new RegExp(ID_PATTERN);
export const isWellFormedId = (id: string): boolean => idRegex.test(id);
