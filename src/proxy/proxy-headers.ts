/**
 * The headers a proxied request and its answer carry on (docs/proxy.md): the hop-by-hop ones are
 * dropped each way, `X-Forwarded-*` are set, and the caller's Gantry API key never reaches the pod.
 */
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';

/** Headers of one connection, never passed on (RFC 9110 7.6.1), and those named by `Connection`. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'proxy-authenticate',
  'proxy-authorization',
]);

/** A Gantry API key (`gty_…`): `Authorization: Bearer gty_…` or the bare key. */
const GANTRY_KEY = /^(?:bearer\s+)?gty_/i;

/** Whether the Authorization header carries a Gantry API key (it is then not passed to the pod). */
export const carriesGantryKey = (authorization: string | undefined): boolean =>
  authorization !== undefined && GANTRY_KEY.test(authorization.trim());

const NONE: ReadonlySet<string> = new Set();

function connectionTokens(headers: IncomingHttpHeaders): ReadonlySet<string> {
  const value = headers.connection;
  // most requests name no header, or only `keep-alive` (hop-by-hop already)
  if (value === undefined || value === 'keep-alive') return NONE;
  return new Set(
    (value ?? '')
      .split(',')
      .map((t) => t.trim().toLowerCase())
      .filter(Boolean),
  );
}

/** Adds a header line, a repeated name (Set-Cookie, Cookie) keeping every value. */
function append(out: OutgoingHttpHeaders, name: string, value: string): void {
  const seen = out[name];
  out[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [String(seen), value];
}

export interface ForwardContext {
  /** `http` or `https`, as the client reached the proxy */
  proto: string;
  /** the client's address */
  clientAddress: string;
  /** `/{label}` under a path prefix, '' by Host */
  prefix: string;
  /** an upgrade (a WebSocket): its `Connection: upgrade` and `Upgrade` go on */
  upgrade: boolean;
  /** a cookie of the proxy's own, taken out of `Cookie` */
  dropCookie?: string;
  /** `Authorization` is not passed on at all (it was the key the proxy checked) */
  dropAuthorization?: boolean;
}

/** `value` (a Cookie header) without the cookie `name`; null when nothing is left. */
function withoutCookie(value: string, name: string): string | null {
  const kept = value
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p && p.split('=')[0] !== name);
  return kept.length > 0 ? kept.join('; ') : null;
}

/** The request's headers for the pod. */
export function requestHeaders(req: IncomingMessage, ctx: ForwardContext): OutgoingHttpHeaders {
  const named = connectionTokens(req.headers);
  const out: OutgoingHttpHeaders = {};
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || named.has(lower) || lower.startsWith('x-forwarded-') || lower === 'forwarded')
      continue;
    if (lower === 'authorization' && (ctx.dropAuthorization || carriesGantryKey(raw[i + 1]))) continue;
    let value: string | null = raw[i + 1]!;
    if (lower === 'cookie' && ctx.dropCookie) value = withoutCookie(value, ctx.dropCookie);
    if (value === null) continue;
    append(out, name, value);
  }
  if (ctx.upgrade) {
    out.Connection = 'upgrade';
    out.Upgrade = req.headers.upgrade ?? 'websocket';
  }
  const host = req.headers.host ?? '';
  out['X-Forwarded-For'] = ctx.clientAddress;
  out['X-Forwarded-Host'] = host;
  out['X-Forwarded-Proto'] = ctx.proto;
  if (ctx.prefix) out['X-Forwarded-Prefix'] = ctx.prefix;
  return out;
}

/**
 * An answer's headers as the client gets them, from its raw headers (`[name, value, …]`) and its
 * `Connection` value: hop-by-hop ones dropped; under a prefix, a local `Location` and a cookie's
 * `Path=/` put back under it.
 */
export function answerHeaders(
  raw: readonly string[],
  connection: string | undefined,
  prefix: string,
): OutgoingHttpHeaders {
  const named = connectionTokens({ connection: connection || undefined });
  const out: OutgoingHttpHeaders = {};
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || named.has(lower)) continue;
    let value = raw[i + 1]!;
    if (prefix && lower === 'location' && value.startsWith('/') && !value.startsWith('//')) value = prefix + value;
    if (prefix && lower === 'set-cookie') value = value.replace(/(;\s*path=)\/(?=;|$)/i, `$1${prefix}/`);
    append(out, name, value);
  }
  return out;
}

/** Sets `name` in `headers`, replacing it under any spelling (a pod's own cannot stand beside it). */
export function setHeader(headers: OutgoingHttpHeaders, name: string, value: string): void {
  const lower = name.toLowerCase();
  for (const key of Object.keys(headers)) if (key.toLowerCase() === lower) delete headers[key];
  headers[name] = value;
}

/** An upgrade's request head as the pod or worker gets it (the bytes after it are joined as they are). */
export function upgradeHead(method: string | undefined, path: string, headers: OutgoingHttpHeaders): string {
  let text = `${method ?? 'GET'} ${path} HTTP/1.1\r\n`;
  for (const [name, value] of Object.entries(headers))
    for (const v of Array.isArray(value) ? value : [value]) text += `${name}: ${String(v)}\r\n`;
  return `${text}\r\n`;
}
