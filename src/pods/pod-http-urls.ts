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
}

/** `{publicUrl}/{label}/`, or `{scheme}://{label}.{domain}{:port}/` with a wildcard domain; null while the proxy is off. */
export function podHttpUrls(names: PodProxyNames, proxy: PodProxyAddress): PodHttpUrl {
  return (podId, port) => {
    if (!proxy.listening) return null;
    const label = names.label(podId, port);
    if (!proxy.domain) return `${proxy.publicUrl}/${label}/`;
    const base = new URL(proxy.publicUrl);
    return `${base.protocol}//${label}.${proxy.domain}${base.port ? `:${base.port}` : ''}/`;
  };
}
