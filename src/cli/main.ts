#!/usr/bin/env node
import { ApiError } from '../domain/errors.js';
import { MultiAccountRefused } from '../runtime/account-isolation.js';
import { RuntimeStartRefused } from '../runtime/create-runtime.js';
import { UsageError } from './args.js';
import { serve, serveHelp } from './serve.js';
import { accounts, accountsHelp } from './accounts.js';
import { keys, keysHelp } from './keys.js';
import { worker, workerHelp } from './worker-env.js';
import { agent, agentHelp } from './agent.js';
import { AgentFatal } from '../agent/agent-fatal.js';
import { hosts, hostsHelp } from './hosts.js';
import { clientHelp, runClient } from './client/index.js';
import { CliError, EXIT } from './client/exit-codes.js';

const help = `gantry — self-hostable compute platform

${serveHelp}

${accountsHelp}

${keysHelp}

${hostsHelp}

${workerHelp}

${agentHelp}

${clientHelp}
`;

const commands: Record<string, (argv: string[]) => Promise<void>> = { serve, accounts, keys, hosts, worker, agent };

async function main(argv: string[]): Promise<void> {
  const [name, ...rest] = argv;
  if (!name || name === 'help' || name === '--help' || name === '-h') return void console.log(help);
  const client = runClient(name, rest);
  // A client command ends the process with its status (an idle keep-alive socket must not hold it).
  if (client) return process.exit(await client);
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!command) throw new UsageError(`unknown command "${name}"\n\n${help}`);
  await command(rest);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof CliError) {
    console.error(`gantry: ${err.message}`);
    process.exit(err.exitCode);
  }
  if (err instanceof AgentFatal) {
    console.error(`gantry: ${err.message}`);
    process.exit(err.exitCode);
  }
  if (
    err instanceof UsageError ||
    err instanceof ApiError ||
    err instanceof MultiAccountRefused ||
    err instanceof RuntimeStartRefused
  )
    console.error(`gantry: ${err.message}`);
  else if (err instanceof Error && (err as NodeJS.ErrnoException).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION')
    console.error(`gantry: ${err.message}`);
  else console.error(err);
  process.exit(EXIT.usage);
});
