/**
 * Where the client commands find the server and the key (docs/cli.md "Server and key"):
 * flags (`--url`, `--api-key`) over the environment (`GANTRY_URL`, `GANTRY_API_KEY`) over a
 * profile of the profile file, then the default URL. The profile is `--profile NAME`, else
 * `GANTRY_PROFILE`, else the file's `current`, else `default`. The file is
 * `GANTRY_CLI_CONFIG`, else `$XDG_CONFIG_HOME/gantry/config.json` (`~/.config/gantry/config.json`).
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CliError, EXIT } from './exit-codes.js';

export const DEFAULT_URL = 'http://127.0.0.1:8080';

interface Profile {
  url?: string;
  apiKey?: string;
}

export interface ProfileFile {
  current?: string;
  profiles: Record<string, Profile>;
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

/** The profile file; an empty one when it does not exist. A file that is not one is a configuration error. */
export function readProfileFile(path: string, warn: (text: string) => void = () => {}): ProfileFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { profiles: {} };
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
  const profiles: Record<string, Profile> = {};
  for (const [name, p] of Object.entries(parsed.profiles)) {
    if (!isObject(p)) throw new CliError(EXIT.usage, `profile "${name}" in ${path} is not an object`);
    profiles[name] = {
      ...(typeof p.url === 'string' ? { url: p.url } : {}),
      ...(typeof p.apiKey === 'string' ? { apiKey: p.apiKey } : {}),
    };
  }
  return { ...(typeof parsed.current === 'string' ? { current: parsed.current } : {}), profiles };
}

/** Writes the file with mode 0600 (its folder 0700), through a temporary file renamed over it. */
export function writeProfileFile(path: string, file: ProfileFile): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
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
    throw new CliError(EXIT.usage, `no profile "${name}" in ${path} (gantry login --profile ${name} adds it)`);
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
