import type { DataCenter } from '../domain/catalog.js';
import { iso } from '../domain/clock.js';
import type { Template } from '../domain/template.js';
import type { Endpoint } from '../domain/endpoint.js';
import { cpuConfigOf, inLocations } from '../domain/endpoint-compute.js';

/** A serverless endpoint as `GET /v2/serverless` answers it (spec 2.10). */
export interface ServerlessEndpointView {
  id: string;
  name: string;
  type: 'QUEUE' | 'LOAD_BALANCER';
  requestUrls: Record<'run' | 'runSync' | 'status' | 'stream' | 'cancel' | 'retry' | 'purgeQueue' | 'health', string>;
  image: string;
  args: string;
  disk: number;
  ports: string[];
  env: Record<string, string>;
  registry: string | null;
  /** null for a CPU endpoint, which answers `cpu` instead. */
  gpu: { pools: string[]; count: number; allowedCudaVersions: string[]; minCudaVersion: string | null } | null;
  cpu?: Array<{ id: string; vcpuCount: number; memory: number }>;
  /** `idleTimeout` is left out for a queue-based endpoint scaling on request count (it does not apply). */
  workers: { min: number; max: number; idleTimeout?: number };
  scaling: { type: string; queueDelay?: number; requestCount?: number };
  dataCenterIds: string[];
  networkVolumes: string[];
  timeout: number;
  flashboot: 'OFF' | 'FLASHBOOT';
  /** Seconds an idle FlashBoot worker is kept suspended (Gantry's own field; docs/serverless.md "FlashBoot"). */
  flashBootKeepSeconds: number;
  allowedCudaVersions: string[];
  createdAt: string;
  /** A load-balancing endpoint's address on the proxy listener (Gantry's own field; docs/load-balancing.md). */
  loadBalancerUrl?: string;
}

export interface EndpointViewContext {
  /** Base URL clients reach the job API at, without a trailing slash. */
  publicUrl: string;
  dataCenters: readonly Pick<DataCenter, 'id' | 'country'>[];
  /** Where load-balancing endpoints are reached (config `proxy`; absent: no `loadBalancerUrl`). */
  loadBalancer?: LoadBalancerAddress;
}

/** The proxy listener's public URL and the load balancer's wildcard domain (config `proxy`, read at each call). */
export interface LoadBalancerAddress {
  listening: boolean;
  /** `http(s)://host:port`, no trailing slash */
  publicUrl: string;
  loadBalancer: { domain: string | null };
}

/** `{scheme}://{id}.{domain}{:port}` with a wildcard domain, else `{publicUrl}/lb/{id}`; null while the proxy is off. */
function loadBalancerUrl(address: LoadBalancerAddress, endpointId: string): string | null {
  if (!address.listening) return null;
  const { domain } = address.loadBalancer;
  if (!domain) return `${address.publicUrl}/lb/${endpointId}`;
  const base = new URL(address.publicUrl);
  return `${base.protocol}//${endpointId}.${domain}${base.port ? `:${base.port}` : ''}`;
}

/** The job-operation addresses of an endpoint; those about one job end with `/{job_id}`. */
function requestUrls(publicUrl: string, endpointId: string): ServerlessEndpointView['requestUrls'] {
  const base = `${publicUrl}/v2/${endpointId}`;
  return {
    run: `${base}/run`,
    runSync: `${base}/runsync`,
    status: `${base}/status/{job_id}`,
    stream: `${base}/stream/{job_id}`,
    cancel: `${base}/cancel/{job_id}`,
    retry: `${base}/retry/{job_id}`,
    purgeQueue: `${base}/purge-queue`,
    health: `${base}/health`,
  };
}

/** Data centers `locations` names (by country or id); all of them when `locations` is empty. */
const dataCentersFor = (locations: readonly string[], dataCenters: EndpointViewContext['dataCenters']): string[] =>
  dataCenters.filter((d) => inLocations(locations, d)).map((d) => d.id);

/**
 * Container settings come from the endpoint's template, with the endpoint's env overriding the
 * template's per key. `template` is null only if it vanished; the container fields are then empty.
 */
export function toServerlessView(
  e: Endpoint,
  template: Template | null,
  ctx: EndpointViewContext,
): ServerlessEndpointView {
  return {
    id: e.id,
    name: e.name,
    type: e.type === 'LB' ? 'LOAD_BALANCER' : 'QUEUE',
    requestUrls: requestUrls(ctx.publicUrl, e.id),
    image: template?.imageName ?? '',
    args: template?.args ?? '',
    disk: template?.containerDiskInGb ?? 0,
    ports: template?.ports ?? [],
    env: { ...(template?.env ?? {}), ...e.env },
    registry: template?.containerRegistryAuthId ?? null,
    gpu:
      e.instanceIds.length > 0
        ? null
        : {
            pools: e.gpuIds,
            count: e.gpuCount,
            allowedCudaVersions: e.allowedCudaVersions,
            minCudaVersion: e.minCudaVersion,
          },
    ...(e.instanceIds.length > 0 ? { cpu: e.instanceIds.map(cpuConfigOf) } : {}),
    workers:
      e.type === 'QB' && e.scalerType === 'REQUEST_COUNT'
        ? { min: e.workersMin, max: e.workersMax }
        : { min: e.workersMin, max: e.workersMax, idleTimeout: e.idleTimeout },
    scaling:
      e.scalerType === 'REQUEST_COUNT'
        ? { type: e.scalerType, requestCount: e.scalerValue }
        : { type: e.scalerType, queueDelay: e.scalerValue },
    dataCenterIds: dataCentersFor(e.locations, ctx.dataCenters),
    networkVolumes: e.networkVolumeId === null ? [] : [e.networkVolumeId],
    timeout: e.executionTimeoutMs,
    flashboot: e.flashboot ? 'FLASHBOOT' : 'OFF',
    flashBootKeepSeconds: e.flashBootKeepSeconds,
    allowedCudaVersions: e.allowedCudaVersions,
    createdAt: iso(e.createdAt),
    ...lbField(e, ctx),
  };
}

/**
 * A load-balancing endpoint's absolute address on the proxy listener, as every surface shows it
 * (v2, v1, GraphQL, the console, the CLI); null for a queue endpoint or while the proxy is off.
 */
export function loadBalancerUrlOf(e: Pick<Endpoint, 'id' | 'type'>, address: LoadBalancerAddress): string | null {
  return e.type === 'LB' ? loadBalancerUrl(address, e.id) : null;
}

function lbField(e: Endpoint, ctx: EndpointViewContext): { loadBalancerUrl?: string } {
  const url = ctx.loadBalancer ? loadBalancerUrlOf(e, ctx.loadBalancer) : null;
  return url === null ? {} : { loadBalancerUrl: url };
}
