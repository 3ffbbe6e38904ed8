/**
 * The fleet's two secrets (docs/fleet.md "Identity"): join tokens (`gjt_` + 32 base62) and host
 * credentials (`ghc_<hostId>_<32 base62>`, ≈ 190 random bits each). Both are stored as SHA-256
 * hashes only. A credential names its host, so checking one is a lookup by id and one hash
 * comparison, never a scan.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { newId } from '../domain/ids.js';

const JOIN_TOKEN_PREFIX = 'gjt_';
export const HOST_CREDENTIAL_PREFIX = 'ghc_';

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const SECRET_LENGTH = 32;
const JOIN_TOKEN = /^gjt_[A-Za-z0-9]{32}$/;
const CREDENTIAL = /^ghc_(host-[a-z0-9]{12})_[A-Za-z0-9]{32}$/;

/** `length` base62 characters from the CSPRNG, uniform (bytes ≥ 248 are drawn again). */
function base62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b >= 248) continue;
      out += BASE62[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export const hashSecret = (secret: string): string => createHash('sha256').update(secret).digest('hex');

/** Whether `hash` (hex) is the hash of `secret`, in time independent of where they differ. */
export function secretMatches(secret: string, hash: string): boolean {
  const a = Buffer.from(hashSecret(secret), 'hex');
  const b = Buffer.from(hash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

export const newJoinToken = (): string => JOIN_TOKEN_PREFIX + base62(SECRET_LENGTH);
export const looksLikeJoinToken = (text: string): boolean => JOIN_TOKEN.test(text);

export const newHostId = (): string => `host-${newId(12)}`;

export const newHostCredential = (hostId: string): string =>
  `${HOST_CREDENTIAL_PREFIX}${hostId}_${base62(SECRET_LENGTH)}`;

/** The host a credential names, or null when the text is no host credential. */
export function credentialHostId(text: string): string | null {
  return CREDENTIAL.exec(text)?.[1] ?? null;
}
