/**
 * Which pod port a request to the proxy listener is for (docs/proxy.md): by its Host, when that is
 * `{label}.{proxy.domain}`, else by the first segment of its path, `/{label}/…`, which is taken off
 * before the request goes on (the pod sees `X-Forwarded-Prefix: /{label}`).
 */

export interface ProxyRoute {
  /** `{podId}-{port}-{token}` as given (lowercased) */
  label: string;
  /** the path and query the pod gets */
  path: string;
  /** `/{label}` under a path prefix; '' by Host */
  prefix: string;
}

/** A label's characters; the full check of the name is the targets' (pod-proxy-names.ts). */
const LABEL = /^[a-z0-9-]{1,63}$/;

/** The host name of a Host header, lowercased, without its port or a trailing dot; null when it is not one. */
export function hostNameOf(host: string | undefined): string | null {
  if (!host || host.length > 255) return null;
  const name = (host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d*$/, ''))
    .toLowerCase()
    .replace(/\.$/, '');
  return /^[a-z0-9.[\]:-]+$/.test(name) ? name : null;
}

/**
 * The route of a request, or, for `/{label}` without its slash, where to send it (`redirect`),
 * or null when the request names no pod port.
 */
export function routeOf(
  host: string | undefined,
  url: string,
  domain: string | null,
): ProxyRoute | { redirect: string } | null {
  const name = hostNameOf(host);
  if (domain && name && name.endsWith(`.${domain}`)) {
    const label = name.slice(0, -(domain.length + 1));
    return LABEL.test(label) ? { label, path: url.startsWith('/') ? url : `/${url}`, prefix: '' } : null;
  }
  if (!url.startsWith('/')) return null;
  const end = url.slice(1).search(/[/?]/);
  const first = end === -1 ? url.slice(1) : url.slice(1, end + 1);
  const label = first.toLowerCase();
  if (!LABEL.test(label)) return null;
  const rest = end === -1 ? '' : url.slice(end + 1);
  // `/{label}` and `/{label}?q`: the pod's root, where relative links resolve only under a slash
  if (!rest.startsWith('/')) return { redirect: `/${first}/${rest}` };
  return { label, path: rest, prefix: `/${first}` };
}
