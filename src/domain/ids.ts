import { randomBytes } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** Opaque lowercase alphanumeric id. 14 chars ≈ 72 bits; job ids use more so they cannot be guessed. */
export function newId(length = 14): string {
  const bytes = randomBytes(length * 2);
  let out = '';
  for (let i = 0; i < bytes.length && out.length < length; i++) {
    const b = bytes[i]!;
    // 252 = 7 * 36: reject the tail to keep the distribution uniform
    if (b < 252) out += ALPHABET[b % 36];
  }
  return out.length === length ? out : out + newId(length - out.length);
}

/** Job ids are unguessable: 128+ bits of randomness. */
export const newJobId = (): string => `${newId(8)}-${newId(18)}`;

/** Ids accepted on paths: what we issue, plus some slack for ids issued by other systems. */
export const ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$';
const idRegex = new RegExp(ID_PATTERN);
export const isWellFormedId = (id: string): boolean => idRegex.test(id);
