import { homedir, hostname } from 'node:os';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import pino from 'pino';
import { parseArgs } from 'node:util';
import { UsageError } from './usage-error.js';
import { defaultNamespace } from '../runtime/default-namespace.js';
import { DEFAULT_DOCKER_HOST } from '../runtime/docker/config.js';
import { parseDockerHost } from '../runtime/docker/engine-info.js';
import { parseSubnetPool } from '../domain/subnet-pool.js';
import { parseRegistryPattern } from '../domain/registry-policy.js';
import type { AgentOptions } from '../agent/start-agent.js';
import { agentVersion } from '../agent/agent-version.js';

export const agentHelp = `gantry agent --server URL[,URL…] [--token T] [--data-dir DIR] [--name NAME] [--public-ip IP]
             [--port-range A-B] [--disk-gb N] [--docker-host H] [--namespace NS] [--nvidia-smi CMD]
             [--gpu-mode auto|nvidia|env-only] [--firewall install|off] [--firewall-command "CMD ARGS"]
             [--network-pool CIDR] [--registries-allow REGISTRY[,REGISTRY…]]
Runs this host's agent: joins the control plane at URL (outbound only) and runs its pods and
workers on the local Docker Engine (docs/fleet.md).
  --server     GANTRY_AGENT_SERVER     the control plane's URL; several, comma-separated, are tried in turn
  --ca-file    GANTRY_CA_FILE          a PEM CA file the control plane's https certificate is checked against,
                                       besides the system's authorities (NODE_EXTRA_CA_CERTS too)
  --token      GANTRY_AGENT_TOKEN      a one-time join token (gantry hosts token create); only needed
                                       until the host credential is stored
  --data-dir   GANTRY_AGENT_DATA_DIR   the host credential and applied operations (default ~/.gantry-agent)
  --name       GANTRY_AGENT_NAME       the host's name on the control plane (default the hostname)
  --public-ip  GANTRY_AGENT_PUBLIC_IP  the address clients reach published ports at (default 127.0.0.1
                                       for a local engine: set it)
  --port-range                         host ports for pods' published ports (default 20000-29999)
  --disk-gb                            disk to offer (default the free space of the engine's data root)
  --docker-host DOCKER_HOST            the engine (default ${DEFAULT_DOCKER_HOST})
  --namespace                          labels what the agent creates on the engine (default a hash of the data dir)
  --nvidia-smi                         the nvidia-smi to run (default nvidia-smi on PATH)
  --gpu-mode                           how GPUs reach containers (default auto: nvidia when the engine can)
  --firewall   GANTRY_AGENT_FIREWALL   install (default): the agent installs the container firewall (needs
                                       CAP_NET_ADMIN; it refuses to run without it); off: containers reach
                                       their host's services unless you firewall them (docs/security.md)
  --firewall-command                   a prefix for iptables-save/iptables-restore, words split on spaces
                                       (sudo -n; nsenter --net=/run/netns/engine)
  --network-pool GANTRY_AGENT_NETWORK_POOL  the IPv4 range account networks take /24s from (default 10.224.0.0/12)
  --registries-allow GANTRY_AGENT_REGISTRIES_ALLOW  registries this host's engine may pull from although
                                       they are on a private address (host, host:port, [ipv6]:port,
                                       *.domain; comma-separated); others on one are refused
Exit status: 0 stopped (SIGTERM/SIGINT; containers keep running), 1 no engine, 2 bad input or join
token, 3 the host was revoked.`;

const options = {
  server: { type: 'string' },
  token: { type: 'string' },
  'data-dir': { type: 'string' },
  name: { type: 'string' },
  'public-ip': { type: 'string' },
  'port-range': { type: 'string' },
  'disk-gb': { type: 'string' },
  'docker-host': { type: 'string' },
  namespace: { type: 'string' },
  'nvidia-smi': { type: 'string' },
  'gpu-mode': { type: 'string' },
  firewall: { type: 'string' },
  'firewall-command': { type: 'string' },
  'network-pool': { type: 'string' },
  'registries-allow': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = { [K in keyof typeof options]?: (typeof options)[K]['type'] extends 'boolean' ? boolean : string };

/** The agent's options from its flags and environment; throws {@link UsageError} saying what is wrong. */
function agentOptions(values: Values, env: NodeJS.ProcessEnv): Omit<AgentOptions, 'logger'> {
  const serverList = values.server ?? (env.GANTRY_AGENT_SERVER || undefined);
  if (!serverList)
    throw new UsageError("gantry agent needs --server URL (or GANTRY_AGENT_SERVER): the control plane's public URL");
  const servers = serverList
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (servers.length === 0) throw new UsageError('--server names no URL');
  for (const server of servers) {
    let url: URL;
    try {
      url = new URL(server);
    } catch {
      throw new UsageError(`--server "${server}" is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new UsageError(`--server "${server}" must be an http:// or https:// URL`);
    if (url.username || url.password)
      throw new UsageError(
        '--server URLs must not carry a user or password: the agent authenticates with its token, then its credential',
      );
    if (url.search || url.hash)
      throw new UsageError(`--server "${url.origin}${url.pathname}…" must not have a query or fragment`);
  }
  const token = values.token ?? (env.GANTRY_AGENT_TOKEN || null);
  // Never echoed: a mistyped token is still most of a token.
  if (token !== null && !/^gjt_[A-Za-z0-9]{8,128}$/.test(token))
    throw new UsageError(
      '--token is not a join token (gjt_ followed by letters and digits): create one with gantry hosts token create',
    );
  const dataDir = resolve(values['data-dir'] ?? (env.GANTRY_AGENT_DATA_DIR || `${homedir()}/.gantry-agent`));
  const name = values.name ?? (env.GANTRY_AGENT_NAME || hostname());
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(name))
    throw new UsageError(`--name "${name.slice(0, 80)}" must be 1 to 63 letters, digits, dots, dashes and underscores`);
  const publicIp = values['public-ip'] ?? (env.GANTRY_AGENT_PUBLIC_IP || null);
  if (publicIp !== null && isIP(publicIp) === 0)
    throw new UsageError(`--public-ip "${publicIp}" must be an IP address`);
  let portRange: [number, number] = [20000, 29999];
  if (values['port-range'] !== undefined) {
    const m = /^(\d{1,5})-(\d{1,5})$/.exec(values['port-range']);
    const [first, last] = m ? [Number(m[1]), Number(m[2])] : [NaN, NaN];
    if (!m || first < 1024 || last > 65535 || first > last || last - first + 1 > 20_000)
      throw new UsageError(
        `--port-range "${values['port-range']}" must be FIRST-LAST within 1024-65535, first <= last, at most 20000 ports`,
      );
    portRange = [first, last];
  }
  let diskGb: number | null = null;
  if (values['disk-gb'] !== undefined) {
    diskGb = Number(values['disk-gb']);
    if (!/^\d+(\.\d+)?$/.test(values['disk-gb']) || diskGb > 1_048_576)
      throw new UsageError(`--disk-gb "${values['disk-gb']}" must be a number of GB from 0 to 1048576`);
  }
  const dockerHost = values['docker-host'] ?? (env.DOCKER_HOST || DEFAULT_DOCKER_HOST);
  try {
    parseDockerHost(dockerHost);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const namespace = values.namespace ?? defaultNamespace(null, '', dataDir);
  if (!/^[a-z0-9][a-z0-9-]{0,31}$/.test(namespace))
    throw new UsageError(
      '--namespace must be 1 to 32 lowercase letters, digits and dashes, starting with a letter or digit',
    );
  const gpuMode = values['gpu-mode'] ?? 'auto';
  if (gpuMode !== 'auto' && gpuMode !== 'nvidia' && gpuMode !== 'env-only')
    throw new UsageError(`--gpu-mode must be auto, nvidia or env-only, got "${gpuMode}"`);
  const firewall = values.firewall ?? (env.GANTRY_AGENT_FIREWALL || 'install');
  if (firewall !== 'install' && firewall !== 'off')
    throw new UsageError(`--firewall must be install or off, got "${firewall}"`);
  const networkPool = values['network-pool'] ?? (env.GANTRY_AGENT_NETWORK_POOL || '10.224.0.0/12');
  try {
    parseSubnetPool(networkPool, 24);
  } catch (err) {
    throw new UsageError(`--network-pool: ${(err as Error).message}`);
  }
  const registriesAllow = (values['registries-allow'] ?? env.GANTRY_AGENT_REGISTRIES_ALLOW ?? '')
    .split(',')
    .map((r) => r.trim())
    .filter((r) => r !== '');
  for (const entry of registriesAllow) {
    const pattern = parseRegistryPattern(entry);
    if (typeof pattern === 'string') throw new UsageError(`--registries-allow: ${pattern}`);
  }
  return {
    servers,
    token,
    dataDir,
    name,
    publicIp,
    portRange,
    diskGb,
    dockerHost,
    namespace,
    nvidiaSmi: values['nvidia-smi'] ?? 'nvidia-smi',
    gpuMode,
    agentVersion: agentVersion(),
    firewall:
      firewall === 'install'
        ? { command: (values['firewall-command'] ?? '').split(/\s+/).filter((w) => w !== '') }
        : null,
    networkPool,
    registriesAllow,
  };
}

/** `gantry agent`: runs until SIGTERM/SIGINT (exit 0), or fails with AgentFatal's exit status. */
export async function agent(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options, strict: true });
  if (values.help) return void console.log(agentHelp);
  const settings = agentOptions(values, process.env);
  const logger = pino({
    level: process.env.GANTRY_LOG_LEVEL ?? 'info',
    base: { component: 'agent' },
    redact: { paths: ['token', 'credential', '*.token', '*.credential'], censor: '[redacted]' },
  });
  // Loaded here, not by the CLI's entry: the other commands never load the agent and its runtime.
  const { createAgent } = await import('../agent/start-agent.js');
  const core = await createAgent({ ...settings, logger });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping: a last report, then the runtime detaches (containers keep running)');
    const force = setTimeout(() => process.exit(1), 30_000);
    force.unref();
    void core.stop();
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  await core.run();
  process.exit(0);
}
