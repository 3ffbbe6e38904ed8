import { createHash, randomBytes } from 'node:crypto';

const KEY_PREFIX = 'gty_';

/** A new API key: prefix + 40 base62-ish characters (≈ 238 bits). */
export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(30).toString('base64url').replace(/[-_]/g, 'x');
}

export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('hex');

/** Keys are opaque printable tokens; anything else cannot be one of ours (or a bootstrap key). */
export const looksLikeKey = (key: string): boolean => /^[\x21-\x7e]{8,256}$/.test(key);
