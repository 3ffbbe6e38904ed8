/**
 * With `proxy.requireKey` on (docs/proxy.md, "Who may reach a port"), a request to a pod's port
 * needs one of: an `Authorization` with an API key of the pod's account (read or write); the
 * session cookie the proxy set for that port; or the signed ticket of a pod answer's `link`, which
 * is answered with a redirect to the same address without it, setting that cookie (HttpOnly,
 * SameSite=Lax, scoped to the port's path or host, 12 hours). The cookie never reaches the pod.
 */
import type { IncomingMessage } from 'node:http';
import { ApiError } from '../domain/errors.js';
import { TICKET_PARAM } from '../pods/pod-http-urls.js';
import type { PodHttpTarget } from '../pods/pod-http-targets.js';
import type { ProxyRoute } from './proxy-route.js';

export const SESSION_COOKIE = 'gantry_proxy_session';
const SESSION_MS = 12 * 3_600_000;

export interface ProxyAccessDeps {
  targets: {
    pass(purpose: 'ticket' | 'session', label: string, expiresAt: number): string;
    checkPass(purpose: 'ticket' | 'session', label: string, pass: string): boolean;
  };
  /** The account of an API key, or null (a worker key is no account key here). */
  accountOf(key: string): Promise<string | null>;
  now(): number;
}

export type Access = { ok: true } | { redirect: string; setCookie: string } | ApiError;

/** The session cookie's value in a Cookie header, or null. */
function sessionCookie(cookie: string | undefined): string | null {
  if (!cookie) return null;
  for (const part of cookie.split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === SESSION_COOKIE) return value.join('=');
  }
  return null;
}

/** Whether the request may reach `target` (see the module comment). */
export async function checkAccess(
  req: IncomingMessage,
  route: ProxyRoute,
  target: PodHttpTarget,
  deps: ProxyAccessDeps,
): Promise<Access> {
  const query = route.path.indexOf('?');
  if (query !== -1) {
    const params = new URLSearchParams(route.path.slice(query + 1));
    const ticket = params.get(TICKET_PARAM);
    if (ticket !== null) {
      if (!deps.targets.checkPass('ticket', route.label, ticket))
        return new ApiError(
          'UNAUTHORIZED',
          "This link to the pod's port has expired or is not valid: open the port again from the pod's page, or send an API key of the pod's account (Authorization: Bearer <key>).",
        );
      params.delete(TICKET_PARAM);
      const rest = params.toString();
      const secure = (req.socket as { encrypted?: boolean }).encrypted ? '; Secure' : '';
      const session = deps.targets.pass('session', route.label, deps.now() + SESSION_MS);
      return {
        redirect: `${route.prefix}${route.path.slice(0, query)}${rest ? `?${rest}` : ''}`,
        setCookie: `${SESSION_COOKIE}=${session}; Path=${route.prefix}/; Max-Age=${SESSION_MS / 1000}; HttpOnly; SameSite=Lax${secure}`,
      };
    }
  }
  const session = sessionCookie(req.headers.cookie);
  if (session !== null && deps.targets.checkPass('session', route.label, session)) return { ok: true };
  const header = req.headers.authorization?.trim();
  const key = header?.replace(/^bearer\s+/i, '');
  if (key) {
    const accountId = await deps.accountOf(key);
    if (accountId === target.accountId) return { ok: true };
    if (accountId !== null)
      return new ApiError(
        'FORBIDDEN',
        "This API key is not of the pod's account: only its account's keys open its ports.",
      );
  }
  return new ApiError(
    'UNAUTHORIZED',
    "This pod's ports need an API key of its account (Authorization: Bearer <key>), or open them from the pod's page in the console.",
  );
}
