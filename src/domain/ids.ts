import { randomFillSync } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

// Random bytes are drawn from the CSPRNG a pool at a time: one `randomBytes` call per id cost
// ~6% of the server's CPU on `/run` (two ids per job).
const POOL_SIZE = 4096;
const pool = Buffer.allocUnsafe(POOL_SIZE);
let poolOffset = POOL_SIZE;

/** Opaque lowercase alphanumeric id. 14 chars ≈ 72 bits; job ids use more so they cannot be guessed. */
export function newId(length = 14): string {
  let out = '';
  while (out.length < length) {
    if (poolOffset === POOL_SIZE) {
      randomFillSync(pool);
      poolOffset = 0;
    }
    const b = pool[poolOffset++]!;
    // 252 = 7 * 36: reject the tail to keep the distribution uniform
    if (b < 252) out += ALPHABET[b % 36];
  }
  return out;
}

/** Job ids are unguessable: 128+ bits of randomness. */
export const newJobId = (): string => `${newId(8)}-${newId(18)}`;

/** Ids accepted on paths: what we issue, plus some slack for ids issued by other systems. */
export const ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$';
const idRegex = new RegExp(ID_PATTERN);
export const isWellFormedId = (id: string): boolean => idRegex.test(id);
