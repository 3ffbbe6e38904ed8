import { createHash, randomBytes } from 'node:crypto';

const KEY_PREFIX = 'gty_';

/** A new API key: prefix + 40 base62-ish characters (≈ 238 bits). */
export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(30).toString('base64url').replace(/[-_]/g, 'x');
}

export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('hex');

/** Keys are opaque printable tokens; anything else cannot be one of ours (or a bootstrap key). */
export const looksLikeKey = (key: string): boolean => /^[\x21-\x7e]{8,256}$/.test(key);

/** Longest key name, in characters (code points). */
export const KEY_NAME_MAX = 100;

/**
 * Why `name` cannot name a key, or null when it can: 1-100 characters, not only spaces, without
 * control or format characters (C0/C1 controls, bidirectional overrides, zero-width characters,
 * line and paragraph separators), which would let a name rewrite a terminal or disguise itself in
 * a list.
 */
export function keyNameProblem(name: string): string | null {
  if (name.trim().length === 0) return 'must not be empty or only spaces';
  if ([...name].length > KEY_NAME_MAX) return `must be at most ${KEY_NAME_MAX} characters`;
  if (/[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/u.test(name))
    return 'must not hold control or format characters (line breaks, tabs, escapes, bidirectional or zero-width marks)';
  return null;
}
