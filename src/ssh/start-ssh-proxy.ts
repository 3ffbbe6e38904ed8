/** Starts the SSH proxy of a server (config `ssh`, docs/ssh.md): its host key, authorizer and listener. */
import type { TransportServices } from '../transport/services.js';
import { loadHostKey, type HostKey } from './host-key.js';
import { SshAuthorizer } from './ssh-authorizer.js';
import { SshProxy } from './ssh-proxy.js';

/** What the proxy reads of the config: its section (whose port and `listening` it records), the data dir (its host key), the server's host. */
interface SshProxyConfig {
  ssh: SshListenerSettings;
  dataDir: string;
  server: { host: string };
}

/** The `ssh` section (docs/ssh.md): the proxy's timings and where it listens. */
interface SshListenerSettings {
  enabled: boolean;
  port: number;
  portConfigured: boolean;
  listening: boolean;
  idleTimeoutMs: number;
  keepaliveIntervalMs: number;
  keepaliveCountMax: number;
}

export interface RunningSshProxy {
  proxy: SshProxy;
  hostKey: HostKey;
  /** `host:port` it listens on */
  address: string;
  close(): Promise<void>;
}

/**
 * Listens on `ssh.port` of `server.host`, and records the port it got in `config.ssh` (for port 0)
 * with `listening` set, which makes `ssh.proxy` of pods appear. Null when `ssh.enabled` is false,
 * or when the default port is taken (a warning says so; a port the config sets that is taken
 * fails the start instead).
 */
export async function startSshProxy(
  services: Pick<TransportServices, 'pods' | 'accounts' | 'runtime' | 'events' | 'clock' | 'logger'> & {
    config: SshProxyConfig;
  },
): Promise<RunningSshProxy | null> {
  const { config, logger } = services;
  const ssh = config.ssh;
  if (!ssh.enabled) return null;
  const hostKey = loadHostKey(config.dataDir);
  const authorizer = new SshAuthorizer({
    podByToken: (token) => services.pods.bySshToken(token),
    keysOf: (accountId) => services.accounts.sshKeysOf(accountId),
  });
  const proxy = new SshProxy({
    config: ssh,
    hostKey: hostKey.privateKey,
    authorizer,
    runtime: services.runtime,
    clock: services.clock,
    logger: logger.child({ component: 'ssh' }),
  });
  let port: number;
  try {
    port = await proxy.listen(ssh.port, config.server.host);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE' && !ssh.portConfigured) {
      logger.warn(
        `the SSH proxy is off: its default port ${ssh.port} is taken (set ssh.port or GANTRY_SSH_PORT to another port, or ssh.enabled: false)`,
      );
      await proxy.close();
      return null;
    }
    await proxy.close();
    throw new Error(`the SSH proxy cannot listen on ${config.server.host}:${ssh.port}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  ssh.port = port;
  ssh.listening = true;
  if (hostKey.created)
    logger.info({ path: hostKey.path, fingerprint: hostKey.fingerprint }, 'generated the SSH proxy host key');
  // A pod that leaves RUNNING ends its sessions (the runtime's shell ends with the instance too).
  const unsubscribe = services.events.on('pod:status', ({ podId, to }) => {
    if (to !== 'RUNNING') proxy.closePod(podId, `the pod is ${to}`);
  });
  return {
    proxy,
    hostKey,
    address: `${config.server.host.includes(':') ? `[${config.server.host}]` : config.server.host}:${port}`,
    async close() {
      unsubscribe();
      ssh.listening = false;
      await proxy.close();
    },
  };
}
