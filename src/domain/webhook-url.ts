/**
 * The form a job's `webhook` must have (spec 2.12): an absolute http(s) URL naming a host. Checked
 * strictly at submit, because the URL is later handed to an HTTP client and shown back in status
 * views and logs: control characters, whitespace and credentials have no place in it.
 */
import { isIP } from 'node:net';

/** Longest webhook URL accepted: room for any real receiver plus a token in its query string. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** C0 and C1 controls, DEL, and every Unicode space or invisible separator. */
// eslint-disable-next-line no-control-regex -- matching control characters is this pattern's purpose
const FORBIDDEN_CHARS = /[\u0000-\u0020\u007f-\u00a0\u1680\u180e\u2000-\u200f\u2028-\u202f\u205f\u2060\u3000\ufeff]/u;

/**
 * What is wrong with `value` as a job's webhook, as a sentence naming `webhook`; null when it is
 * a valid webhook URL.
 */
export function webhookUrlViolation(value: unknown): string | null {
  if (typeof value !== 'string') return 'webhook must be an http(s) URL';
  if (value.length > MAX_WEBHOOK_URL_LENGTH) return `webhook must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`;
  if (FORBIDDEN_CHARS.test(value)) return 'webhook must not contain whitespace or control characters';
  // The URL parser forgives `http:host`, `http:/host` and backslashes; a webhook spells `//`.
  if (!/^https?:\/\//i.test(value)) return 'webhook must be an http(s) URL';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'webhook must be an http(s) URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'webhook must be an http(s) URL';
  if (url.hostname === '') return 'webhook must name a host';
  const authority = value.slice(value.indexOf('//') + 2).split(/[/?#\\]/)[0] ?? '';
  if (url.username !== '' || url.password !== '' || authority.includes('@'))
    return 'webhook must not carry credentials (user:password@)';
  return null;
}

/**
 * The receiver a webhook URL calls, for per-receiver fairness: its origin (scheme, host, port).
 * A URL that does not parse (a row older than the strict check) is its own receiver.
 */
export function receiverKey(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/** The URL's host as a bare address (IPv6 without brackets) when it is an IP literal, else null. */
export function literalAddress(url: URL): string | null {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return isIP(host) ? host : null;
}
