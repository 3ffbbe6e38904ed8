/**
 * The HTTP client webhooks are sent with: node:http/https, with the address policy checked on the
 * address the connection is actually made to. The host name is resolved once, inside the socket's
 * own `lookup`, and the addresses checked there are the ones the socket connects to: no second
 * resolution, so a receiver whose DNS answers a public address to a check and 127.0.0.1 to the
 * connect (DNS rebinding) gains nothing. An IP literal host is checked before the request (the
 * socket does not call `lookup` for one).
 *
 * Each call has its own connection (no keep-alive pool): a pooled socket would outlive the policy
 * decision it was opened under. Redirects are never followed: node:http does not follow them.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { literalAddress } from '../domain/webhook-url.js';
import { WebhookAddressRefused, type WebhookAddressPolicy } from './webhook-address-policy.js';

/** The part of `fetch` the dispatcher uses (what `createWebhookFetch` implements). */
export type FetchLike = (
  url: string,
  init: { method: 'POST'; headers: Record<string, string>; body: string; redirect: 'manual'; signal: AbortSignal },
) => Promise<{
  status: number;
  body: { cancel(): Promise<void> } | null;
}>;

/** Resolves a host name to every address it has. */
export type ResolveLike = (hostname: string) => Promise<LookupAddress[]>;

export interface WebhookHttpDeps {
  policy: Pick<WebhookAddressPolicy, 'refusal'>;
  /** @default dns.lookup(hostname, { all: true }) (what node:http itself would use) */
  resolve?: ResolveLike;
}

const systemResolve: ResolveLike = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** A `FetchLike` that refuses (with `WebhookAddressRefused`) what the address policy refuses. */
export function createWebhookFetch(deps: WebhookHttpDeps): FetchLike {
  const resolve = deps.resolve ?? systemResolve;
  return async (rawUrl, init) => {
    const url = new URL(rawUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new WebhookAddressRefused('webhook URL is not http(s)');
    const literal = literalAddress(url);
    if (literal !== null) {
      const why = await deps.policy.refusal(literal, [literal]);
      if (why) throw new WebhookAddressRefused(why);
    }
    const lookup: LookupFunction = (hostname, options, callback) => {
      resolve(hostname)
        .then(async (found) => {
          const family = options.family === 4 || options.family === 6 ? options.family : 0;
          const addresses = family ? found.filter((a) => a.family === family) : found;
          if (addresses.length === 0)
            throw Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' });
          // Every address is checked, not only the first: the socket may try them all.
          const why = await deps.policy.refusal(
            hostname,
            addresses.map((a) => a.address),
          );
          if (why) throw new WebhookAddressRefused(why);
          if (options.all) callback(null, addresses);
          else callback(null, addresses[0]!.address, addresses[0]!.family);
        })
        .catch((err: NodeJS.ErrnoException) => callback(err, '', 0));
    };
    const client = url.protocol === 'https:' ? https : http;
    const body = Buffer.from(init.body);
    return new Promise((resolveCall, reject) => {
      const req = client.request({
        method: init.method,
        protocol: url.protocol,
        hostname: literal ?? url.hostname,
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        headers: { ...init.headers, 'content-length': String(body.length) },
        lookup,
        agent: false,
        signal: init.signal,
      });
      req.once('response', (res) => {
        res.on('error', () => undefined); // destroyed unread on purpose
        resolveCall({
          status: res.statusCode ?? 0,
          body: {
            // the answer's body is not read: close the connection
            cancel: async () => void res.destroy(),
          },
        });
      });
      req.on('error', reject);
      req.end(body);
    });
  };
}

/** fetch wraps socket errors as `TypeError: fetch failed` with the useful part in `cause`. */
export function describeNetworkError(err: unknown): string {
  const cause = (err as { cause?: unknown } | null)?.cause;
  const pick = (e: unknown): string | null => {
    if (!e || typeof e !== 'object') return null;
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string') return code;
    return typeof message === 'string' ? message : null;
  };
  return pick(cause) ?? pick(err) ?? String(err);
}
