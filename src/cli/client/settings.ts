/**
 * Where the client commands find the server and the key (docs/cli.md "Server and key"):
 * flags (`--url`, `--api-key`) over the environment (`GANTRY_URL`, `GANTRY_API_KEY`) over a
 * profile of the profile file, then the default URL. The profile is `--profile NAME`, else
 * `GANTRY_PROFILE`, else the file's `current`, else `default`. The file is
 * `GANTRY_CLI_CONFIG`, else `$XDG_CONFIG_HOME/gantry/config.json` (`~/.config/gantry/config.json`).
 */
import { chmodSync, mkdirSync, readFileSync, realpathSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CliError, EXIT } from './exit-codes.js';

export const DEFAULT_URL = 'http://127.0.0.1:8080';

interface Profile {
  url?: string;
  apiKey?: string;
  /** Fields the CLI does not use are kept as they are when it rewrites the file. */
  [other: string]: unknown;
}

export interface ProfileFile {
  current?: string;
  profiles: Record<string, Profile>;
  [other: string]: unknown;
}

type Source = 'flag' | 'env' | 'profile' | 'default' | 'none';

export interface Connection {
  url: string;
  apiKey: string | undefined;
  /** The profile read (null when none was). */
  profile: string | null;
  sources: { url: Source; apiKey: Source };
}

type Env = Record<string, string | undefined>;

export function profilePath(env: Env = process.env): string {
  if (env.GANTRY_CLI_CONFIG) return env.GANTRY_CLI_CONFIG;
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config');
  return join(base, 'gantry', 'config.json');
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The profile file; an empty one when it does not exist. A file that is not one (not JSON, no
 * "profiles" object, a profile or a field of the wrong type) is a configuration error: nothing is
 * guessed, and no command rewrites such a file.
 */
export function readProfileFile(path: string, warn: (text: string) => void = () => {}): ProfileFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      return { profiles: Object.create(null) as Record<string, Profile> };
    throw new CliError(EXIT.usage, `cannot read the profile file ${path}: ${(err as Error).message}`);
  }
  const mode = statSync(path).mode & 0o777;
  if (mode & 0o077)
    warn(`gantry: ${path} is readable by others (mode ${mode.toString(8)}): it holds API keys; chmod 600 it`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new CliError(EXIT.usage, `the profile file ${path} is not JSON: ${(err as Error).message}`);
  }
  if (!isObject(parsed) || !isObject(parsed.profiles))
    throw new CliError(EXIT.usage, `the profile file ${path} needs a "profiles" object (docs/cli.md)`);
  if (parsed.current !== undefined && parsed.current !== null && typeof parsed.current !== 'string')
    throw new CliError(EXIT.usage, `"current" in the profile file ${path} must be a profile's name`);
  // A record without a prototype: a profile named "__proto__" or "constructor" is only a name.
  const profiles = Object.create(null) as Record<string, Profile>;
  for (const [name, p] of Object.entries(parsed.profiles)) {
    if (!isObject(p)) throw new CliError(EXIT.usage, `profile ${shown(name)} in ${path} is not an object`);
    for (const field of ['url', 'apiKey'])
      if (p[field] !== undefined && p[field] !== null && typeof p[field] !== 'string')
        throw new CliError(EXIT.usage, `profile ${shown(name)} in ${path}: "${field}" must be a string`);
    const profile = Object.create(null) as Profile;
    for (const [k, v] of Object.entries(p)) if (v !== null) profile[k] = v;
    profiles[name] = profile;
  }
  const rest: Record<string, unknown> = { ...parsed };
  delete rest.current;
  delete rest.profiles;
  return { ...rest, ...(typeof parsed.current === 'string' ? { current: parsed.current } : {}), profiles };
}

/**
 * Writes the file with mode 0600 (its folder 0700), through a temporary file renamed over it (over
 * the file a symbolic link points to, so the link stays).
 */
export function writeProfileFile(path: string, file: ProfileFile): void {
  let target = path;
  try {
    target = realpathSync(path);
  } catch {
    // not there yet
  }
  mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
  const tmp = `${target}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, target);
}

/** A name `gantry login` may give a profile: letters, digits, dots, dashes and underscores, 1 to 64. */
export const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Control characters, and the zero-width and direction marks that make text read otherwise than it is. */
const invisible = (code: number): boolean =>
  code < 0x20 ||
  (code >= 0x7f && code <= 0x9f) ||
  (code >= 0x200b && code <= 0x200f) ||
  (code >= 0x2028 && code <= 0x202e) ||
  (code >= 0x2066 && code <= 0x2069);

/**
 * A name or URL from the file, quoted for a terminal: control characters (an escape sequence in a
 * hand-edited file) and direction marks are shown as `\uXXXX`, never sent to the terminal.
 */
export function shown(text: string): string {
  let out = '';
  for (const c of text) {
    const code = c.charCodeAt(0);
    if (c === '"' || c === '\\') out += `\\${c}`;
    else if (invisible(code)) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += c;
  }
  return `"${out}"`;
}

/** At most the first 8 characters of a key (as `gantry keys list` shows them), and at most a quarter of it. */
export function keyHint(key: string): string {
  return `${key.slice(0, Math.min(8, Math.floor(key.length / 4)))}…`;
}

export interface ConnectionFlags {
  url?: string | undefined;
  apiKey?: string | undefined;
  profile?: string | undefined;
}

/** The profile named by the flag or the environment, else the file's current one, else `default`. */
export function profileName(flags: ConnectionFlags, env: Env, file: ProfileFile): { name: string; explicit: boolean } {
  const named = flags.profile ?? env.GANTRY_PROFILE;
  if (named) return { name: named, explicit: true };
  return { name: file.current ?? 'default', explicit: false };
}

export function resolveConnection(
  flags: ConnectionFlags,
  env: Env = process.env,
  warn: (text: string) => void = () => {},
): Connection {
  const path = profilePath(env);
  // The file is read only when something is left to find in it.
  const needFile = !(flags.url ?? env.GANTRY_URL) || !(flags.apiKey ?? env.GANTRY_API_KEY) || !!flags.profile;
  const file = needFile ? readProfileFile(path, warn) : { profiles: {} };
  const { name, explicit } = profileName(flags, env, file);
  const profile = Object.hasOwn(file.profiles, name) ? file.profiles[name] : undefined;
  if (explicit && needFile && !profile)
    throw new CliError(EXIT.usage, `no profile ${shown(name)} in ${path} (gantry profiles list shows them)`);
  const pick = (flag: string | undefined, fromEnv: string | undefined, fromProfile: string | undefined) =>
    flag
      ? { value: flag, source: 'flag' as const }
      : fromEnv
        ? { value: fromEnv, source: 'env' as const }
        : fromProfile
          ? { value: fromProfile, source: 'profile' as const }
          : undefined;
  const url = pick(flags.url, env.GANTRY_URL, profile?.url);
  const key = pick(flags.apiKey, env.GANTRY_API_KEY, profile?.apiKey);
  return {
    url: url?.value ?? DEFAULT_URL,
    apiKey: key?.value,
    profile: profile ? name : null,
    sources: { url: url?.source ?? 'default', apiKey: key?.source ?? 'none' },
  };
}
