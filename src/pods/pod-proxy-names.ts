/**
 * The names the pod HTTP proxy answers to (docs/proxy.md): `{podId}-{port}-{token}`, one DNS label
 * (at most 63 characters, lowercase). The token is 100 bits of an HMAC of the pod id and port
 * under a key derived from the installation's secret key: a pod id (about 72 bits, and shown to
 * whoever sees the pod) does not lead to it, it needs no storage, and every replica derives the
 * same one. A name is checked in constant time.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** 20 characters of base32: 100 bits. */
const TOKEN_CHARS = 20;
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';
const LABEL = /^([a-z0-9]{1,32})-([0-9]{1,5})-([a-z2-7]{20})$/;

export interface PodProxyName {
  podId: string;
  /** the pod's port (the `<port>` of its `<port>/http`) */
  port: number;
}

/** Names recently found valid, so a busy port's requests do not each compute an HMAC. */
const REMEMBERED = 4096;

export class PodProxyNames {
  readonly #key: Buffer;
  readonly #valid = new Map<string, PodProxyName>();

  /** `key`: 32 bytes that only this installation holds (the secret key's `derive('pod-proxy')`). */
  constructor(key: Buffer) {
    if (key.length < 32) throw new Error('the pod proxy key must be at least 32 bytes');
    this.#key = key;
  }

  /** The label of the pod's port: `{podId}-{port}-{token}`. */
  label(podId: string, port: number): string {
    return `${podId}-${port}-${this.#token(podId, port)}`;
  }

  /** The pod and port a label names, or null when it is not one this installation made. */
  parse(label: string): PodProxyName | null {
    const known = this.#valid.get(label);
    if (known) return known;
    const m = LABEL.exec(label.toLowerCase());
    if (!m) return null;
    const podId = m[1]!;
    const port = Number(m[2]);
    if (!Number.isInteger(port) || port < 1 || port > 65_535 || String(port) !== m[2]) return null;
    const expected = Buffer.from(this.#token(podId, port));
    const given = Buffer.from(m[3]!);
    if (!timingSafeEqual(expected, given)) return null;
    const name = Object.freeze({ podId, port });
    if (this.#valid.size >= REMEMBERED) this.#valid.clear();
    this.#valid.set(label, name);
    return name;
  }

  /**
   * A pass for `label` until `expiresAt` (ms epoch): `{expiresAt}.{mac}`, for `purpose` (`ticket`:
   * the short-lived link the console opens; `session`: the cookie the proxy sets from it).
   */
  pass(purpose: 'ticket' | 'session', label: string, expiresAt: number): string {
    return `${expiresAt}.${this.#mac(`${purpose}:${label.toLowerCase()}:${expiresAt}`)}`;
  }

  /** Whether `pass` is one `pass(purpose, label, …)` made and it has not expired at `now`. */
  checkPass(purpose: 'ticket' | 'session', label: string, pass: string, now: number): boolean {
    const m = /^(\d{13})\.([0-9a-f]{32})$/.exec(pass);
    if (!m) return false;
    const expiresAt = Number(m[1]);
    if (expiresAt <= now) return false;
    const expected = Buffer.from(this.#mac(`${purpose}:${label.toLowerCase()}:${expiresAt}`));
    return timingSafeEqual(expected, Buffer.from(m[2]!));
  }

  #mac(text: string): string {
    return createHmac('sha256', this.#key).update(text).digest('hex').slice(0, 32);
  }

  #token(podId: string, port: number): string {
    const mac = createHmac('sha256', this.#key).update(`${podId}:${port}`).digest();
    let out = '';
    // 5 bits per character, from the MAC's first 13 bytes
    let bits = 0;
    let value = 0;
    for (const byte of mac) {
      value = (value << 8) | byte;
      bits += 8;
      while (bits >= 5 && out.length < TOKEN_CHARS) {
        out += BASE32[(value >>> (bits - 5)) & 31];
        bits -= 5;
      }
      value &= (1 << bits) - 1;
      if (out.length === TOKEN_CHARS) break;
    }
    return out;
  }
}
