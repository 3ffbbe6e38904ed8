/** The `ssh` section of the config: the SSH proxy (docs/ssh.md). */
import { bool, fail, isObj, num } from './config-values.js';

/** The SSH proxy: an SSH server inside Gantry that opens a shell inside a pod (spec 2.6 `ssh.proxy`). */
export interface SshConfig {
  /** Whether the proxy listens. `GANTRY_SSH_ENABLED`. @default true */
  enabled: boolean;
  /**
   * The port it listens on, on `server.host`; 0 picks a free one. `GANTRY_SSH_PORT`.
   * @default 2222, or 0 when `server.port` is 0 (a server on a port picked for it, as in tests)
   */
  port: number;
  /** The host `ssh.proxy` advertises (and its `command` dials). `GANTRY_SSH_HOST`. @default the host of `server.publicUrl` */
  host: string;
  /** A session with no traffic either way for this long is closed. 0: never. @default 1800000 (30 min) */
  idleTimeoutMs: number;
  /** How often a quiet connection is probed (keepalive); 0: never. @default 15000 */
  keepaliveIntervalMs: number;
  /** Unanswered probes after which a connection counts as half-open and is closed. @default 3 */
  keepaliveCountMax: number;
  /** Whether `port` was set (rather than the default): a set port that is taken fails the start, the default one only turns the proxy off. */
  portConfigured: boolean;
  /**
   * Whether the proxy listens right now (false while it is off, before it started, or when the
   * default port was taken): `ssh.proxy` is null while it is false. Set by the server, not read
   * from the config file.
   */
  listening: boolean;
}

export const SSH_KEYS = ['enabled', 'port', 'host', 'idleTimeoutMs', 'keepaliveIntervalMs', 'keepaliveCountMax'] as const;

/** The default SSH port when `server.port` is not 0. */
export const DEFAULT_SSH_PORT = 2222;

export function parseSsh(raw: unknown, env: Record<string, string | undefined>, server: { port: number; publicUrl: string }): SshConfig {
  if (raw !== undefined && !isObj(raw)) fail('ssh must be a mapping');
  const section = raw ?? {};
  const enabled = bool(env.GANTRY_SSH_ENABLED ?? section.enabled, 'ssh.enabled', true);
  const rawPort = env.GANTRY_SSH_PORT ?? section.port;
  const port = Math.floor(num(rawPort, 'ssh.port', server.port === 0 ? 0 : DEFAULT_SSH_PORT));
  if (port < 0 || port > 65_535) fail(`ssh.port must be a TCP port (0-65535), not ${port}`);
  const host = env.GANTRY_SSH_HOST ?? (typeof section.host === 'string' ? section.host : hostOf(server.publicUrl));
  if (!host || /[\s@]/.test(host)) fail(`ssh.host must be a host name or address, not "${host}"`);
  return {
    enabled,
    port,
    host,
    idleTimeoutMs: Math.max(0, num(section.idleTimeoutMs, 'ssh.idleTimeoutMs', 1_800_000)),
    keepaliveIntervalMs: Math.max(0, num(section.keepaliveIntervalMs, 'ssh.keepaliveIntervalMs', 15_000)),
    keepaliveCountMax: Math.max(1, Math.floor(num(section.keepaliveCountMax, 'ssh.keepaliveCountMax', 3))),
    portConfigured: rawPort !== undefined && rawPort !== null && rawPort !== '',
    listening: false,
  };
}

/** The host name of a URL, without IPv6 brackets. */
function hostOf(url: string): string {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return '127.0.0.1';
  }
}
