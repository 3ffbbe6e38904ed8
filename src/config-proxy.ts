/** The `proxy` section of the config: the pod HTTP proxy (docs/proxy.md). */
import { Type, type StaticDecode } from '@sinclair/typebox';
import { amount, count, flag, listenPort, orNull } from './config-fields.js';
import { fail } from './config-values.js';

/** `proxy.loadBalancer`: load-balancing serverless endpoints on the proxy listener (docs/load-balancing.md). */
const LoadBalancerSchema = Type.Object(
  {
    domain: orNull(
      Type.String({ pattern: '^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$', mustBe: 'a lowercase DNS name' }),
      'A wildcard DNS name (`*.{domain}`) pointing at the proxy listener: a load-balancing endpoint is then `{endpointId}.{domain}`, with the scheme and port of `proxy.publicUrl`. null: `{proxy.publicUrl}/lb/{endpointId}/` only (both are always served).',
      { env: 'GANTRY_LB_DOMAIN' },
    ),
    workerWaitMs: count(
      100,
      120_000,
      'How long a request waits for a ready worker (while one starts) before it is answered 503 with Retry-After.',
    ),
    processingTimeoutMs: count(
      1_000,
      330_000,
      'How long a worker may take to start its answer (status line and headers) before the caller gets 504; the body then streams while it moves (`proxy.idleTimeoutMs`).',
    ),
    maxPayloadBytes: count(
      1,
      30 * 1024 * 1024,
      "Largest request body a load-balancing endpoint's worker is sent; more is 413.",
    ),
    healthIntervalMs: count(
      100,
      1_000,
      "How often each worker's health path is asked (`PORT_HEALTH`, `HEALTH_CHECK_PATH`).",
    ),
    healthTimeoutMs: count(100, 5_000, 'A health check not answered within this long counts as unhealthy.'),
    replicas: Type.Object(
      {
        refreshMs: count(
          100,
          1_000,
          "How often a replica reads the workers other replicas launched, besides the reads the lease holder's word asks for when it launches, suspends, resumes or stops one (a change whose word was lost reaches its balancer at the next read; PostgreSQL only).",
        ),
        publishGapMs: count(50, 250, "The least time between two writes of a replica's load-balancing demand."),
        heartbeatMs: count(
          500,
          5_000,
          'How often a demand that did not change is written again (the replica is alive).',
        ),
        ttlMs: count(
          1_000,
          15_000,
          "A replica's demand not written for this long counts for nothing (the replica is gone); more than twice `heartbeatMs`.",
        ),
      },
      {
        description:
          'Load balancing across replicas sharing PostgreSQL (docs/load-balancing.md "Replicas"): how fresh each replica\'s view of the others is.',
        default: {},
      },
    ),
  },
  {
    description: 'Load-balancing serverless endpoints, served on the proxy listener (docs/load-balancing.md).',
    default: {},
  },
);

export const ProxySchema = Type.Object(
  {
    enabled: flag(true, "Whether the pod HTTP proxy listens (each pod's `<port>/http` ports over HTTP).", {
      env: 'GANTRY_PROXY_ENABLED',
    }),
    port: listenPort(
      "The port it listens on, on `server.host`: a listener of its own, so pods' pages never share the console's origin. 0 picks a free one.",
      'GANTRY_PROXY_PORT',
      '8081, or 0 when `server.port` is 0',
    ),
    publicUrl: orNull(
      Type.String({ pattern: '^https?://[^/?#]+/?$', mustBe: 'an http:// or https:// URL without a path' }),
      'The URL clients reach the proxy listener at; a pod port is then `{publicUrl}/{podId}-{port}-{token}/`.',
      { env: 'GANTRY_PROXY_PUBLIC_URL', defaultText: "`server.publicUrl`'s host with the proxy's port" },
    ),
    domain: orNull(
      Type.String({ pattern: '^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$', mustBe: 'a lowercase DNS name' }),
      'A wildcard DNS name (`*.{domain}`) pointing at the proxy listener: pod ports are then `{podId}-{port}-{token}.{domain}`, at the root of their own origin, with the scheme and port of `proxy.publicUrl`. null: path prefixes only (both are always served).',
      { env: 'GANTRY_PROXY_DOMAIN' },
    ),
    requireKey: flag(
      false,
      "Whether reaching a pod's port also needs its account's API key (`Authorization: Bearer <key>`), or a cookie set by following the signed `link` a pod answer carries (the console's links). false: the URL is the capability, as on the platform.",
      { env: 'GANTRY_PROXY_REQUIRE_KEY' },
    ),
    maxConnectionsPerPod: count(
      1,
      1_000,
      'Proxied connections one pod may have open at once (its WebSockets included).',
    ),
    maxConnectionsPerAccount: count(1, 5_000, "Proxied connections to one account's pods at once."),
    connectTimeoutMs: count(100, 10_000, "How long a connection to a pod's port may take before the caller gets 504."),
    responseTimeoutMs: count(
      1_000,
      330_000,
      'How long a pod may take to start its answer (the status line and headers) before the caller gets 504; a body then streams for as long as it moves.',
    ),
    idleTimeoutMs: amount(
      600_000,
      'A proxied connection (a request, a WebSocket, an event stream) with no bytes either way for this long is closed. 0: never.',
    ),
    loadBalancer: LoadBalancerSchema,
  },
  { description: "The pod HTTP proxy: each pod's `<port>/http` ports, reached through Gantry (docs/proxy.md)." },
);

export type ProxyConfig = Omit<StaticDecode<typeof ProxySchema>, 'port' | 'publicUrl'> & {
  port: number;
  /** without a trailing slash; its port follows the listener's when the listener picked it (port 0) */
  publicUrl: string;
  /** Whether `publicUrl` was set (rather than derived from the listener). */
  publicUrlConfigured: boolean;
  portConfigured: boolean;
  /** Whether the proxy listens right now; set by the server, not read from the config file. */
  listening: boolean;
};

const DEFAULT_PROXY_PORT = 8081;

/** The decoded `proxy` section, with the defaults that follow the server's. */
export function resolveProxy(
  section: StaticDecode<typeof ProxySchema>,
  server: { port: number; publicUrl: string },
): ProxyConfig {
  const port = section.port ?? (server.port === 0 ? 0 : DEFAULT_PROXY_PORT);
  const { heartbeatMs, ttlMs } = section.loadBalancer.replicas;
  if (ttlMs <= 2 * heartbeatMs)
    fail(
      `proxy.loadBalancer.replicas.ttlMs (${ttlMs}) must be more than twice heartbeatMs (${heartbeatMs}): a live replica's demand would lapse between two of its writes`,
    );
  let publicUrl = section.publicUrl?.replace(/\/+$/, '') ?? null;
  if (publicUrl === null) {
    try {
      const base = new URL(server.publicUrl);
      base.port = String(port);
      publicUrl = `${base.protocol}//${base.host}`;
    } catch {
      fail(`proxy.publicUrl cannot be derived from server.publicUrl "${server.publicUrl}": set it`);
    }
  }
  return {
    ...section,
    port,
    publicUrl,
    publicUrlConfigured: section.publicUrl !== null,
    portConfigured: section.port !== undefined,
    listening: false,
  };
}
