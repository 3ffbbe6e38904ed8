#!/usr/bin/env node
import { UsageError } from './usage-error.js';
import { clientHelp, runClient } from './client/index.js';
import { CliError, EXIT } from './client/exit-codes.js';
import { versionText } from './version.js';
import { caFileFrom, trustCaFile } from '../transport/tls-trust.js';

type Run = (argv: string[]) => Promise<void>;

/**
 * The commands that run the server or open its store, loaded only when one runs: a client command
 * (client/) starts without loading the server's code.
 */
const commands: Record<string, () => Promise<Run>> = {
  serve: async () => (await import('./serve.js')).serve,
  accounts: async () => (await import('./accounts.js')).accounts,
  keys: async () => (await import('./keys.js')).keys,
  hosts: async () => (await import('./hosts.js')).hosts,
  worker: async () => (await import('./worker-env.js')).worker,
  agent: async () => (await import('./agent.js')).agent,
  backup: async () => (await import('./backup.js')).backup,
  restore: async () => (await import('./backup.js')).restore,
};

async function help(): Promise<string> {
  const [serve, accounts, keys, hosts, worker, agent, backup] = await Promise.all([
    import('./serve.js'),
    import('./accounts.js'),
    import('./keys.js'),
    import('./hosts.js'),
    import('./worker-env.js'),
    import('./agent.js'),
    import('./backup.js'),
  ]);
  return `gantry — self-hostable compute platform

gantry --version | gantry version
                                prints the version (and the commit it was built from, when known)

${serve.serveHelp}

${accounts.accountsHelp}

${keys.keysHelp}

${hosts.hostsHelp}

${worker.workerHelp}

${agent.agentHelp}

${backup.backupHelp}

${clientHelp}

Over https://, the client commands and the agent verify the server's certificate against the system's
authorities (NODE_EXTRA_CA_CERTS adds to them) and --ca-file FILE or GANTRY_CA_FILE (a PEM CA file).
`;
}

/**
 * `--ca-file FILE` (or `--ca-file=FILE`), taken out of the arguments wherever it stands (before a
 * `--`): every command that calls a server over HTTPS trusts the CA file besides the system's.
 */
function takeCaFile(argv: string[]): { argv: string[]; caFile: string | undefined } {
  const out: string[] = [];
  let caFile: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      out.push(...argv.slice(i));
      break;
    }
    if (arg === '--ca-file') {
      caFile = argv[++i];
      if (caFile === undefined || caFile.startsWith('--'))
        throw new UsageError('--ca-file needs a file (PEM certificates)');
    } else if (arg.startsWith('--ca-file=')) caFile = arg.slice('--ca-file='.length);
    else out.push(arg);
  }
  return { argv: out, caFile };
}

/** Commands that call a Gantry server (the client commands and the agent); they honour --ca-file and GANTRY_CA_FILE. */
async function applyCaFile(flag: string | undefined): Promise<void> {
  const caFile = caFileFrom(flag, process.env);
  if (caFile === null) return;
  try {
    await trustCaFile(caFile);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

async function main(original: string[]): Promise<void> {
  const { argv, caFile } = takeCaFile(original);
  const [name, ...rest] = argv;
  if (!name || name === 'help' || name === '--help' || name === '-h') return void console.log(await help());
  if (name === '--version' || name === 'version') return void console.log(versionText());
  if (name !== 'serve' && name !== 'backup' && name !== 'restore') await applyCaFile(caFile);
  const client = runClient(name, rest);
  // A client command ends the process with its status (an idle keep-alive socket must not hold it).
  if (client) return process.exit(await client);
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!command) throw new UsageError(`unknown command "${name}"\n\n${await help()}`);
  await (
    await command()
  )(rest);
}

async function report(err: unknown): Promise<never> {
  if (err instanceof CliError || err instanceof UsageError) {
    console.error(`gantry: ${err.message}`);
    process.exit(err instanceof CliError ? err.exitCode : EXIT.usage);
  }
  const [{ AgentFatal }, { ApiError }, { MultiAccountRefused }, { RuntimeStartRefused }] = await Promise.all([
    import('../agent/agent-fatal.js'),
    import('../domain/errors.js'),
    import('../runtime/account-isolation.js'),
    import('../runtime/runtime-module.js'),
  ]);
  if (err instanceof AgentFatal) {
    console.error(`gantry: ${err.message}`);
    process.exit(err.exitCode);
  }
  if (err instanceof ApiError || err instanceof MultiAccountRefused || err instanceof RuntimeStartRefused)
    console.error(`gantry: ${err.message}`);
  else if (err instanceof Error && (err as NodeJS.ErrnoException).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION')
    console.error(`gantry: ${err.message}`);
  else console.error(err);
  process.exit(EXIT.usage);
}

main(process.argv.slice(2)).catch(report);
