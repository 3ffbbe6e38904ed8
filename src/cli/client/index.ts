/** The client commands: every resource of the public API from the command line (docs/cli.md). */
import { runCommand, runGroup, type Group } from './command.js';
import { endpoints } from './endpoints.js';
import { jobs } from './jobs.js';
import { login } from './login.js';
import { pods } from './pods.js';
import { logout, profiles } from './profiles.js';
import { templates } from './templates.js';
import { volumes } from './volumes.js';

const groups: Group[] = [pods, endpoints, jobs, templates, volumes, profiles];

export const clientHelp = [
  'Client commands (the REST API of a running server: --url/GANTRY_URL, --api-key/GANTRY_API_KEY or a profile):',
  ...groups.map((g) => `gantry ${`${g.name} …`.padEnd(14)} ${g.summary}: ${g.commands.map((c) => c.name).join(', ')}`),
  `gantry ${'login'.padEnd(14)} ${login.summary}`,
  `gantry ${'logout'.padEnd(14)} ${logout.summary}`,
  'Every command takes --help and --json. Exit status: 0 ok, 1 API error, 2 usage, 3 not found,',
  '4 auth (401/403), 5 timed out waiting. docs/cli.md has it all.',
].join('\n');

/** Runs a client command; answers its exit status, or undefined when `name` is not one. */
export function runClient(name: string, argv: string[]): Promise<number> | undefined {
  if (name === 'login') return runCommand('login', login, argv);
  if (name === 'logout') return runCommand('logout', logout, argv);
  const group = groups.find((g) => g.name === name);
  return group ? runGroup(group, argv) : undefined;
}
