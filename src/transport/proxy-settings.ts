/** The `proxy` section as the pod HTTP proxy (src/proxy/, docs/proxy.md) reads it. */

/** What the proxy itself reads. */
export interface PodProxySettings {
  domain: string | null;
  publicUrl: string;
  /** the account's key (or a cookie from a signed link) is needed as well as the URL */
  requireKey: boolean;
  maxConnectionsPerPod: number;
  maxConnectionsPerAccount: number;
  connectTimeoutMs: number;
  responseTimeoutMs: number;
  idleTimeoutMs: number;
}

/** `proxy.loadBalancer`: load-balancing endpoints on the same listener (docs/load-balancing.md). */
export interface LbSettings {
  domain: string | null;
  workerWaitMs: number;
  processingTimeoutMs: number;
  maxPayloadBytes: number;
}

/** And its listener (its port and public URL are written back once it listens). */
export interface ProxyListenerSettings extends PodProxySettings {
  enabled: boolean;
  port: number;
  portConfigured: boolean;
  publicUrlConfigured: boolean;
  listening: boolean;
  loadBalancer: LbSettings;
}
