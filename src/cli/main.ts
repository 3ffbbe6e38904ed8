#!/usr/bin/env node
import { UsageError } from './usage-error.js';
import { clientHelp, runClient } from './client/index.js';
import { CliError, EXIT } from './client/exit-codes.js';
import { versionText } from './version.js';

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
`;
}

async function main(argv: string[]): Promise<void> {
  const [name, ...rest] = argv;
  if (!name || name === 'help' || name === '--help' || name === '-h') return void console.log(await help());
  if (name === '--version' || name === 'version') return void console.log(versionText());
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
