/**
 * Installs the container firewall (firewall-rules.ts) on the engine's host: `iptables-save` to see
 * what is there, then one atomic `iptables-restore --noflush`. The commands run in the network
 * namespace the engine's bridges live in, which is the one Gantry (or the agent) runs in when the
 * engine is local; `command` prefixes them for any other arrangement (`sudo -n`, `nsenter
 * --net=/run/netns/engine`). Installing needs CAP_NET_ADMIN there.
 */
import { spawn } from 'node:child_process';
import { firewallRestore, type FirewallPolicy } from './firewall-rules.js';

/** Runs `argv` with `input` on stdin; resolves with its stdout, rejects with its stderr. */
export type RunCommand = (argv: readonly string[], input?: string) => Promise<string>;

/** How long one iptables call may take (another holder of the xtables lock waits this long too). */
const COMMAND_TIMEOUT_MS = 20_000;

const runCommand: RunCommand = (argv, input) =>
  new Promise((resolve, reject) => {
    const [file, ...args] = argv;
    if (!file) return reject(new Error('no command to run'));
    const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'], timeout: COMMAND_TIMEOUT_MS });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err = (err + d).slice(-2_000)));
    child.once('error', (e) => reject(new Error(`${argv.join(' ')}: ${e.message}`)));
    child.once('close', (code, signal) => {
      if (code === 0) resolve(out);
      else
        reject(
          new Error(
            `${argv.join(' ')} ${signal ? `was killed (${signal})` : `exited with ${code}`}: ${err.trim() || 'no output'}`,
          ),
        );
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(input ?? '');
  });

export class ContainerFirewall {
  readonly #prefix: readonly string[];
  readonly #run: RunCommand;

  constructor(options: { command: readonly string[]; run?: RunCommand }) {
    this.#prefix = options.command;
    this.#run = options.run ?? runCommand;
  }

  /** Installs or refreshes `policy`; rejects, saying why, when it cannot (no privilege, no iptables). */
  async install(policy: FirewallPolicy): Promise<void> {
    const saved = await this.#run([...this.#prefix, 'iptables-save', '-t', 'filter']);
    await this.#run([...this.#prefix, 'iptables-restore', '--noflush', '-w', '5'], firewallRestore(policy, saved));
  }
}
