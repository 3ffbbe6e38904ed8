/**
 * Which load-balancing endpoint a request to the proxy listener is for (docs/load-balancing.md):
 * by its Host, when that is `{endpointId}.{proxy.loadBalancer.domain}`, or by its path,
 * `/lb/{endpointId}/…`, which is taken off before the request reaches a worker (it sees
 * `X-Forwarded-Prefix: /lb/{endpointId}`). Null: the request is not for one (the pod proxy's).
 */
import { hostNameOf } from './proxy-route.js';

export interface LbRoute {
  endpointId: string;
  /** the path and query the worker gets */
  path: string;
  /** `/lb/{endpointId}` under the path prefix; '' by Host */
  prefix: string;
}

/** An endpoint id's characters (ids are lowercase letters and digits). */
const ENDPOINT_ID = /^[a-z0-9]{1,64}$/;
const PREFIX = '/lb/';

export function lbRouteOf(host: string | undefined, url: string, domain: string | null): LbRoute | null {
  if (domain) {
    const name = hostNameOf(host);
    if (name && name.endsWith(`.${domain}`)) {
      const label = name.slice(0, -(domain.length + 1));
      if (ENDPOINT_ID.test(label))
        return { endpointId: label, path: url.startsWith('/') ? url : `/${url}`, prefix: '' };
    }
  }
  if (!url.startsWith(PREFIX)) return null;
  const rest = url.slice(PREFIX.length);
  const end = rest.search(/[/?]/);
  const endpointId = (end === -1 ? rest : rest.slice(0, end)).toLowerCase();
  if (!ENDPOINT_ID.test(endpointId)) return null;
  const tail = end === -1 ? '' : rest.slice(end);
  // `/lb/{id}` and `/lb/{id}?q` are the worker's root
  return {
    endpointId,
    path: tail.startsWith('/') ? tail : `/${tail}`,
    prefix: `${PREFIX}${rest.slice(0, end === -1 ? rest.length : end)}`,
  };
}
