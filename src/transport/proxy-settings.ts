/** The `proxy` section as the pod HTTP proxy (src/proxy/, docs/proxy.md) reads it. */

/** What the proxy itself reads. */
export interface PodProxySettings {
  domain: string | null;
  publicUrl: string;
  maxConnectionsPerPod: number;
  maxConnectionsPerAccount: number;
  connectTimeoutMs: number;
  responseTimeoutMs: number;
  idleTimeoutMs: number;
}

/** And its listener (its port and public URL are written back once it listens). */
export interface ProxyListenerSettings extends PodProxySettings {
  enabled: boolean;
  port: number;
  portConfigured: boolean;
  publicUrlConfigured: boolean;
  listening: boolean;
}
