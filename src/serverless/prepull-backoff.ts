/**
 * The back-off of a pre-pull that failed (the registry refused it, the credential is wrong, the
 * image is not found): per host and image, the first retry waits {@link FIRST_RETRY_MS}, each
 * further failure doubles the wait up to {@link MAX_RETRY_MS}. A change of what the pull would be
 * made with (the image is the key; the owner's credential is `credential`, a fingerprint) ends
 * the wait at once, as a success does. `now` comes in (tests run it on an injected clock).
 */
import { createHash } from 'node:crypto';

/** The first wait after a failure: the next passes (every 15 s by default) skip the image. */
export const FIRST_RETRY_MS = 60_000;
/** The longest wait between two tries. */
export const MAX_RETRY_MS = 3_600_000;

interface Failing {
  failures: number;
  retryAt: number;
  credential: string;
}

/** A fingerprint of a registry credential (none: ''); never the secret itself. */
export function credentialFingerprint(auth: { username: string; password: string } | null): string {
  if (!auth) return '';
  return createHash('sha256').update(`${auth.username}\0${auth.password}`).digest('hex').slice(0, 16);
}

export class PrepullBackoff {
  readonly #failing = new Map<string, Failing>();

  /** Until when (epoch ms) the pull of `image` on `hostId` waits, or null: it may be tried now. */
  waitingUntil(hostId: string, image: string, credential: string, now: number): number | null {
    const entry = this.#failing.get(`${hostId}\0${image}`);
    if (!entry || entry.credential !== credential || now >= entry.retryAt) return null;
    return entry.retryAt;
  }

  /** Counts a failure at `now`; answers the wait before the next try. */
  failed(hostId: string, image: string, credential: string, now: number): number {
    const key = `${hostId}\0${image}`;
    const previous = this.#failing.get(key);
    const failures = previous && previous.credential === credential ? previous.failures + 1 : 1;
    const wait = Math.min(FIRST_RETRY_MS * 2 ** (failures - 1), MAX_RETRY_MS);
    this.#failing.set(key, { failures, retryAt: now + wait, credential });
    return wait;
  }

  succeeded(hostId: string, image: string): void {
    this.#failing.delete(`${hostId}\0${image}`);
  }
}
