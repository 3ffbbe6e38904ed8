/** The pod HTTP proxy's URL of a pod's port (docs/proxy.md), as pod answers show it in `httpProxy`. */
import type { PodHttpUrl } from './pod-view.js';
import type { PodProxyNames } from './pod-proxy-names.js';

/** Where the proxy is reached (config `proxy`, read at each call: its port is known once it listens). */
export interface PodProxyAddress {
  listening: boolean;
  /** `http(s)://host:port`, no trailing slash */
  publicUrl: string;
  /** the wildcard domain, or null for path prefixes */
  domain: string | null;
  /** the account's key is required: answers carry a short-lived signed `link` that sets a cookie */
  requireKey: boolean;
}

/** How long a pod answer's `link` opens its port (the cookie it sets lasts `SESSION_MS`). */
const LINK_MS = 5 * 60_000;
/** The query parameter carrying a link's ticket. */
export const TICKET_PARAM = 'gantry_proxy_ticket';

/** `{publicUrl}/{label}/`, or `{scheme}://{label}.{domain}{:port}/` with a wildcard domain; null while the proxy is off. */
export function podHttpUrls(names: PodProxyNames, proxy: PodProxyAddress, now: () => number): PodHttpUrl {
  return (podId, port) => {
    if (!proxy.listening) return null;
    const label = names.label(podId, port);
    let url: string;
    if (!proxy.domain) url = `${proxy.publicUrl}/${label}/`;
    else {
      const base = new URL(proxy.publicUrl);
      url = `${base.protocol}//${label}.${proxy.domain}${base.port ? `:${base.port}` : ''}/`;
    }
    if (!proxy.requireKey) return { url };
    // a minute's granularity: views rendered within it share one link
    const expiresAt = (Math.floor(now() / 60_000) + 1) * 60_000 + LINK_MS;
    return { url, link: `${url}?${TICKET_PARAM}=${names.pass('ticket', label, expiresAt)}` };
  };
}
