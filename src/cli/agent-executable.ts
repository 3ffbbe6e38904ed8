/**
 * The entry of the agent's single executable (`gantry-agent`, built by scripts/build-agent-sea.mjs):
 * `gantry agent` and nothing else, for a host that has Docker and no Node, repository or compiler.
 * `gantry-agent [agent] [flags]` runs the agent (the word `agent` is optional, so the unit of
 * docs/fleet.md reads the same with either program); `gantry-agent --version` prints its version.
 */
import { UsageError } from './usage-error.js';
import { agent } from './agent.js';
import { AgentFatal } from '../agent/agent-fatal.js';
import { agentVersion } from '../agent/agent-version.js';

async function main(argv: string[]): Promise<void> {
  const args = argv[0] === 'agent' ? argv.slice(1) : argv;
  if (args[0] === '--version' || args[0] === 'version') return void console.log(`gantry-agent ${agentVersion()}`);
  await agent(args);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof UsageError || err instanceof AgentFatal) {
    console.error(`gantry-agent: ${err.message}`);
    process.exit(err instanceof AgentFatal ? err.exitCode : 2);
  }
  if (err instanceof Error && (err as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) {
    console.error(`gantry-agent: ${err.message}`);
    process.exit(2);
  }
  console.error(err);
  process.exit(2);
});
