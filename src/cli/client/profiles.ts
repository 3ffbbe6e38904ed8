/**
 * The profile file from the command line (docs/cli.md "Profiles"): `gantry logout` drops a
 * profile's key, `gantry profiles list|use|rm` show, choose and remove profiles. None of them
 * talks to a server, and none prints a key: at most its first characters (`keyHint`). A file that
 * is not a profile file is refused (exit 2) and never rewritten; a rewrite leaves it mode 0600.
 */
import type { Command, Context, Group } from './command.js';
import { CliError, EXIT } from './exit-codes.js';
import { table } from './output.js';
import {
  keyHint,
  profileName,
  profilePath,
  readProfileFile,
  shown,
  writeProfileFile,
  type ProfileFile,
} from './settings.js';

/** The profile file, warning on stderr when others can read it. */
function open(ctx: Context): { path: string; file: ProfileFile } {
  const path = profilePath();
  return { path, file: readProfileFile(path, (t) => ctx.out.note(t)) };
}

/** `name`'s profile, or a usage error that says which profiles there are. */
function existing(path: string, file: ProfileFile, name: string) {
  const profile = Object.hasOwn(file.profiles, name) ? file.profiles[name] : undefined;
  if (profile) return profile;
  const names = Object.keys(file.profiles);
  throw new CliError(
    EXIT.usage,
    `no profile ${shown(name)} in ${path} (${names.length ? `it has ${names.map(shown).join(', ')}` : 'it has none'}; gantry login --profile NAME adds one)`,
  );
}

/** A name or URL as it is when it is plain printable text, else quoted and escaped. */
const plain = (text: string): string => (/^[!-~]+$/.test(text) && !text.startsWith('"') ? text : shown(text));

/** The profile used when neither --profile nor GANTRY_PROFILE names one. */
const defaultOf = (file: ProfileFile): string => profileName({}, {}, file).name;

export const logout: Command = {
  name: 'logout',
  summary: "remove a profile's API key from the profile file (the profile and its URL stay)",
  details: `The profile is --profile, else GANTRY_PROFILE, else the file's current one, else "default".
Only the saved copy is removed: the key itself still works until it is revoked on the server
(\`gantry keys revoke ID\` on the server's machine). \`gantry profiles rm NAME\` removes a whole profile.
  gantry logout --profile prod`,
  async run(ctx) {
    const { path, file } = open(ctx);
    const { name } = profileName({ profile: ctx.str('profile') }, process.env, file);
    const profile = existing(path, file, name);
    const had = typeof profile.apiKey === 'string';
    if (had) {
      delete profile.apiKey;
      writeProfileFile(path, file);
    }
    ctx.out.show({ profile: name, url: profile.url ?? null, path, removed: had }, () =>
      had
        ? `removed the API key of profile ${shown(name)} (${shown(profile.url ?? '-')}) from ${path}`
        : `profile ${shown(name)} has no API key saved in ${path}: nothing to remove`,
    );
    return EXIT.ok;
  },
};

const list: Command = {
  name: 'list',
  summary: 'the profiles: name, URL, the start of the key, which one is the default',
  details: `The default is the file's current profile (else "default"): what a command uses without
--profile or GANTRY_PROFILE. Keys are never shown, at most their first characters.`,
  async run(ctx) {
    const { path, file } = open(ctx);
    const current = defaultOf(file);
    const rows = Object.entries(file.profiles).map(([name, p]) => ({
      name,
      url: p.url ?? null,
      keyPrefix: typeof p.apiKey === 'string' ? keyHint(p.apiKey) : null,
      default: name === current,
    }));
    if (file.current !== undefined && !Object.hasOwn(file.profiles, file.current))
      ctx.out.note(`gantry: the file's current profile ${shown(file.current)} is not in it (gantry profiles use NAME)`);
    const override = process.env.GANTRY_PROFILE;
    if (override && !ctx.out.json)
      ctx.out.note(`gantry: GANTRY_PROFILE=${shown(override)} is set: commands in this shell use it, not the default`);
    ctx.out.show(rows, () =>
      rows.length === 0
        ? `no profiles in ${path} (gantry login --help)`
        : table(
            ['', 'NAME', 'URL', 'KEY'],
            rows.map((r) => [
              r.default ? '*' : '',
              plain(r.name),
              r.url === null ? '-' : plain(r.url),
              r.keyPrefix ?? '-',
            ]),
          ),
    );
  },
};

const use: Command = {
  name: 'use',
  args: 'NAME',
  arity: [1, 1],
  summary: 'make a profile the default (the file\'s "current")',
  async run(ctx) {
    const { path, file } = open(ctx);
    const name = ctx.args[0]!;
    const profile = existing(path, file, name);
    writeProfileFile(path, { ...file, current: name });
    ctx.out.show({ profile: name, url: profile.url ?? null, path }, () => `profile ${shown(name)} is now the default`);
  },
};

const rm: Command = {
  name: 'rm',
  args: 'NAME',
  arity: [1, 1],
  summary: 'remove a profile, its URL and its key, from the profile file',
  async run(ctx) {
    const { path, file } = open(ctx);
    const name = ctx.args[0]!;
    existing(path, file, name);
    const wasDefault = defaultOf(file) === name;
    delete file.profiles[name];
    const { current, ...rest } = file;
    writeProfileFile(path, current === name ? rest : file);
    ctx.out.show({ profile: name, removed: true, wasDefault, path }, () =>
      [
        `removed profile ${shown(name)} from ${path}`,
        ...(wasDefault ? ['it was the default: choose another with gantry profiles use NAME'] : []),
      ].join('\n'),
    );
  },
};

export const profiles: Group = {
  name: 'profiles',
  summary: 'the saved profiles (server URL and key; no server is asked)',
  commands: [list, use, rm],
};
