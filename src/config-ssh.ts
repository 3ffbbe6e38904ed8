/** The `ssh` section of the config: the SSH proxy (docs/ssh.md); its keys are in config-schema.ts. */
import type { StaticDecode } from '@sinclair/typebox';
import { fail } from './config-values.js';
import type { SshSchema } from './config-schema.js';

/** The SSH proxy: an SSH server inside Gantry that opens a shell inside a pod (spec 2.6 `ssh.proxy`). */
export type SshConfig = Omit<StaticDecode<typeof SshSchema>, 'port' | 'host'> & {
  /** @default 2222, or 0 when `server.port` is 0 (a server on a port picked for it, as in tests) */
  port: number;
  /** @default the host of `server.publicUrl` */
  host: string;
  /** Whether `port` was set (rather than the default): a set port that is taken fails the start, the default one only turns the proxy off. */
  portConfigured: boolean;
  /**
   * Whether the proxy listens right now (false while it is off, before it started, or when the
   * default port was taken): `ssh.proxy` is null while it is false. Set by the server, not read
   * from the config file.
   */
  listening: boolean;
};

/** The default SSH port when `server.port` is not 0. */
const DEFAULT_SSH_PORT = 2222;

/** The decoded `ssh` section, with the defaults that follow the server's. */
export function resolveSsh(
  section: StaticDecode<typeof SshSchema>,
  server: { port: number; publicUrl: string },
): SshConfig {
  const host = section.host ?? hostOf(server.publicUrl);
  if (!host || /[\s@]/.test(host)) fail(`ssh.host must be a host name or address, not "${host}"`);
  return {
    ...section,
    port: section.port ?? (server.port === 0 ? 0 : DEFAULT_SSH_PORT),
    host,
    portConfigured: section.port !== undefined,
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
