/**
 * Which load-balancing endpoint a request to the proxy listener is for (docs/load-balancing.md):
 * by its Host, when that is `{endpointId}.{proxy.loadBalancer.domain}`, or by its path,
 * `/lb/{endpointId}/…`, which is taken off before the request reaches a worker (it sees
 * `X-Forwarded-Prefix: /lb/{endpointId}`). Null: the request is not for one (the pod proxy's).
 * Also what the balancer reads off a request (its worker affinity), and its small refusals.
 */
import { ApiError } from '../domain/errors.js';
import type { Endpoint } from '../domain/endpoint.js';
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

/**
 * `X-Runpod-Worker-Id` as a request sends it: `<id>` (soft: preferred when ready), `strict <id>`
 * (that worker or nothing; one scaled down — suspended by FlashBoot — counts as gone, as upstream
 * resumes only for the next form) or `strict-resume <id>` (as strict, and a suspended worker is
 * resumed for it while the request waits). Anything else is no preference.
 */
export function affinityOf(value: string | string[] | undefined): {
  preferred: string | null;
  strict: boolean;
  resume: boolean;
} {
  const m = typeof value === 'string' ? /^\s*(?:(strict|strict-resume)\s+)?([a-z0-9]{1,64})\s*$/i.exec(value) : null;
  return m
    ? { preferred: m[2]!.toLowerCase(), strict: m[1] !== undefined, resume: m[1]?.toLowerCase() === 'strict-resume' }
    : { preferred: null, strict: false, resume: false };
}

export const tooLarge = (max: number): ApiError =>
  new ApiError(
    'PAYLOAD_TOO_LARGE',
    `A request to a load-balancing endpoint may carry at most ${max} bytes (proxy.loadBalancer.maxPayloadBytes).`,
  );

/** What a 503 for want of a ready worker asks the client to wait, seconds. */
const RETRY_AFTER_S = '10';

/** The 503 of an endpoint whose workers.max is 0. */
export const noWorker = (endpoint: Endpoint): ApiError =>
  new ApiError('NO_WORKER_READY', `Endpoint "${endpoint.id}" has workers.max 0: no worker can take the request.`, {
    headers: { 'retry-after': RETRY_AFTER_S },
  });

/**
 * The 404 of a request pinned (`X-Runpod-Worker-Id: strict`) to a worker the endpoint no longer
 * has, or (`suspended`) to one FlashBoot scaled down, which only `strict-resume` resumes.
 */
export const pinnedGone = (workerId: string, endpoint: Endpoint, suspended = false): ApiError =>
  new ApiError(
    'NOT_FOUND',
    suspended
      ? `affinity_worker_gone: worker "${workerId}" (X-Runpod-Worker-Id: strict) of endpoint "${endpoint.id}" is scaled down (suspended by FlashBoot); send 'strict-resume ${workerId}' to have it resumed for the request, or the worker id alone to have any worker take it.`
      : `affinity_worker_gone: worker "${workerId}" (X-Runpod-Worker-Id: strict) is not one of endpoint "${endpoint.id}"'s active workers; send the request without the header (or soft, the worker id alone) to have any worker take it.`,
  );

/** The 503 of a request that waited `waitMs` for a ready worker (`pinned`: the one it is pinned to). */
export const noneReady = (endpoint: Endpoint, waitMs: number, pinned: string | null): ApiError =>
  new ApiError(
    'NO_WORKER_READY',
    pinned
      ? `worker_timeout: the pinned worker "${pinned}" was not ready within ${waitMs} ms (proxy.loadBalancer.workerWaitMs).`
      : `No worker of endpoint "${endpoint.id}" was ready within ${waitMs} ms (proxy.loadBalancer.workerWaitMs); one may still be starting: retry, or keep workers up with workers.min.`,
    { headers: { 'retry-after': RETRY_AFTER_S } },
  );
