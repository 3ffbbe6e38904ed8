/**
 * The client commands' frame: a command declares its arguments, options and help; the frame parses
 * argv strictly (an unknown flag or a missing argument is a usage error, exit 2), prints help for
 * `--help` (exit 0), and hands the command an API client built from the flags, the environment
 * and the profile file (settings.ts).
 */
import { parseArgs } from 'node:util';
import { UsageError } from '../usage-error.js';
import { CliError, EXIT } from './exit-codes.js';
import { ApiClient } from './http.js';
import { Output } from './output.js';
import { resolveConnection, type Connection } from './settings.js';

interface OptionSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  short?: string;
  /** The value's name in the help (`--name NAME`). */
  value?: string;
  description: string;
}

type Value = string | boolean | (string | boolean)[] | undefined;

export interface Context {
  /** The command's positional arguments. */
  args: string[];
  /** What followed a `--` (passed on, e.g. to ssh). */
  rest: string[];
  out: Output;
  /** The API client; resolving the server and the key happens on the first call. */
  api(): ApiClient;
  connection(): Connection;
  str(name: string): string | undefined;
  bool(name: string): boolean;
  list(name: string): string[];
  /** A whole number option, checked. */
  int(name: string, min?: number): number | undefined;
}

export interface Command {
  name: string;
  /** Positional arguments in the usage line, e.g. `ID` or `ENDPOINT JOB_ID`. */
  args?: string;
  /** How many positionals it takes, [min, max]. */
  arity?: [number, number];
  summary: string;
  /** More lines of help after the summary. */
  details?: string;
  options?: Record<string, OptionSpec>;
  /** Takes arguments after `--`; their name in the usage line. */
  rest?: string;
  /** Answers the exit status (0 when nothing). */
  run(ctx: Context): Promise<number | void>;
}

/** `<name> ID`: DELETE the resource at `path(id)`, answering `{ id, deleted: true }`. */
export function deleteCommand(name: string, summary: string, path: (id: string) => string): Command {
  return {
    name,
    args: 'ID',
    arity: [1, 1],
    summary,
    async run(ctx) {
      const id = ctx.args[0]!;
      await ctx.api().request('DELETE', path(id));
      ctx.out.show({ id, deleted: true }, () => `deleted ${id}`);
    },
  };
}

export interface Group {
  name: string;
  summary: string;
  commands: Command[];
}

const globalOptions: Record<string, OptionSpec> = {
  url: { type: 'string', value: 'URL', description: 'the server (env GANTRY_URL; default http://127.0.0.1:8080)' },
  'api-key': {
    type: 'string',
    value: 'KEY',
    description: 'the API key (env GANTRY_API_KEY; prefer it or a profile: flags show in ps)',
  },
  profile: { type: 'string', value: 'NAME', description: 'a profile of the profile file (env GANTRY_PROFILE)' },
  json: { type: 'boolean', description: 'JSON on stdout for scripts (nothing else on stdout)' },
  help: { type: 'boolean', short: 'h', description: 'this help' },
};

function optionLines(options: Record<string, OptionSpec>): string[] {
  const heads = Object.entries(options).map(([name, o]) => {
    const flag = `${o.short ? `-${o.short}, ` : '    '}--${name}${o.value ? ` ${o.value}` : ''}`;
    return [flag, `${o.description}${o.multiple ? ' (repeatable)' : ''}`] as const;
  });
  const width = Math.max(...heads.map(([f]) => f.length));
  return heads.map(([f, d]) => `  ${f.padEnd(width)}  ${d}`);
}

const usageOf = (path: string, cmd: Command): string =>
  `gantry ${path}${cmd.args ? ` ${cmd.args}` : ''}${cmd.options && Object.keys(cmd.options).length ? ' [options]' : ''}${cmd.rest ? ` [-- ${cmd.rest}]` : ''}`;

function commandHelp(path: string, cmd: Command): string {
  const lines = [`usage: ${usageOf(path, cmd)}`, '', cmd.summary];
  if (cmd.details) lines.push('', cmd.details);
  if (cmd.options && Object.keys(cmd.options).length) lines.push('', 'Options:', ...optionLines(cmd.options));
  lines.push('', 'Global options:', ...optionLines(globalOptions));
  lines.push('', 'Exit status: 0 ok, 1 API error, 2 usage, 3 not found, 4 auth (401/403), 5 timed out (docs/cli.md).');
  return lines.join('\n');
}

function groupHelp(group: Group): string {
  const usages = group.commands.map((c) => [usageOf(`${group.name} ${c.name}`, c), c.summary] as const);
  const width = Math.max(...usages.map(([u]) => u.length));
  return [
    `gantry ${group.name} — ${group.summary}`,
    '',
    'Commands:',
    ...usages.map(([u, s]) => `  ${u.padEnd(width)}  ${s}`),
    '',
    `\`gantry ${group.name} COMMAND --help\` shows a command's options; docs/cli.md has them all.`,
  ].join('\n');
}

const PARSE_ERRORS = new Set([
  'ERR_PARSE_ARGS_UNKNOWN_OPTION',
  'ERR_PARSE_ARGS_INVALID_OPTION_VALUE',
  'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL',
]);

/** Parses `argv` for `cmd` (named `path`, e.g. `pods list`) and runs it; answers the exit status. */
export async function runCommand(path: string, cmd: Command, argv: string[]): Promise<number> {
  const dashes = argv.indexOf('--');
  const own = dashes < 0 ? argv : argv.slice(0, dashes);
  const rest = dashes < 0 ? [] : argv.slice(dashes + 1);
  const options = { ...globalOptions, ...cmd.options };
  let parsed: { values: Record<string, Value>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: own,
      options: Object.fromEntries(
        Object.entries(options).map(([name, o]) => [
          name,
          { type: o.type, ...(o.multiple ? { multiple: true } : {}), ...(o.short ? { short: o.short } : {}) },
        ]),
      ),
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    if (PARSE_ERRORS.has((err as NodeJS.ErrnoException).code ?? ''))
      throw new UsageError(`${(err as Error).message}\nusage: ${usageOf(path, cmd)} (see gantry ${path} --help)`);
    throw err;
  }
  const { values, positionals } = parsed;
  const out = new Output(values.json === true);
  if (values.help === true) {
    out.text(commandHelp(path, cmd));
    return EXIT.ok;
  }
  const [min, max] = cmd.arity ?? [0, 0];
  if (positionals.length < min || positionals.length > max)
    throw new UsageError(
      `${positionals.length < min ? 'missing arguments' : `unexpected argument "${positionals[max]}"`}\nusage: ${usageOf(path, cmd)} (see gantry ${path} --help)`,
    );
  if (rest.length > 0 && !cmd.rest) throw new UsageError(`gantry ${path} takes no arguments after --`);
  const str = (name: string) => (typeof values[name] === 'string' ? values[name] : undefined);
  let connection: Connection | undefined;
  let client: ApiClient | undefined;
  const connect = () =>
    (connection ??= resolveConnection(
      { url: str('url'), apiKey: str('api-key'), profile: str('profile') },
      process.env,
      (t) => out.note(t),
    ));
  const ctx: Context = {
    args: positionals,
    rest,
    out,
    connection: connect,
    api: () => {
      if (client) return client;
      const c = connect();
      if (!c.apiKey)
        throw new CliError(EXIT.auth, 'no API key: pass --api-key, set GANTRY_API_KEY, or run `gantry login`');
      return (client = new ApiClient(c.url, c.apiKey));
    },
    str,
    bool: (name) => values[name] === true,
    list: (name) => {
      const v = values[name];
      return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
    },
    int: (name, min = 0) => {
      const v = str(name);
      if (v === undefined) return undefined;
      if (!/^\d+$/.test(v) || Number(v) < min)
        throw new UsageError(`--${name} must be a whole number ≥ ${min} (got "${v}")`);
      return Number(v);
    },
  };
  return (await cmd.run(ctx)) ?? EXIT.ok;
}

/** `gantry GROUP COMMAND …`: dispatches to the group's command, or prints the group's help. */
export async function runGroup(group: Group, argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${groupHelp(group)}\n`);
    return EXIT.ok;
  }
  if (name === undefined) throw new UsageError(`gantry ${group.name} needs a command\n\n${groupHelp(group)}`);
  const cmd = group.commands.find((c) => c.name === name);
  if (!cmd) throw new UsageError(`unknown command "gantry ${group.name} ${name}"\n\n${groupHelp(group)}`);
  return runCommand(`${group.name} ${name}`, cmd, rest);
}
