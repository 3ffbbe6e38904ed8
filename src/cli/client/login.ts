/**
 * `gantry login`: checks a key against the server and saves it, with the URL, as a profile of the
 * profile file (mode 0600), made the current one. The key comes from --api-key, GANTRY_API_KEY,
 * or stdin (asked for without echo at a terminal); it is never printed.
 */
import { UsageError } from '../usage-error.js';
import type { Command } from './command.js';
import { CliError, EXIT } from './exit-codes.js';
import { ApiClient } from './http.js';
import {
  DEFAULT_URL,
  PROFILE_NAME,
  profileName,
  profilePath,
  readProfileFile,
  shown,
  writeProfileFile,
} from './settings.js';

/** A line from stdin; at a terminal, typed without echo. */
async function readSecret(prompt: string): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) {
    const chunks: Buffer[] = [];
    for await (const chunk of stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0]!.trim();
  }
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.resume();
  let typed = '';
  try {
    for await (const chunk of stdin) {
      for (const ch of (chunk as Buffer).toString('utf8')) {
        if (ch === '\r' || ch === '\n') return typed.trim();
        if (ch === '\u0003') throw new UsageError('interrupted');
        if (ch === '\u007f' || ch === '\b') typed = typed.slice(0, -1);
        else typed += ch;
      }
    }
    return typed.trim();
  } finally {
    stdin.setRawMode(false);
    stdin.pause();
    process.stderr.write('\n');
  }
}

export const login: Command = {
  name: 'login',
  summary: 'save a server URL and an API key as a profile (the profile file, mode 0600)',
  details: `The key comes from --api-key, GANTRY_API_KEY, or stdin (asked for at a terminal). It is
checked (GET /v2/pods) before it is saved; the profile becomes the current one. The file:
GANTRY_CLI_CONFIG, else $XDG_CONFIG_HOME/gantry/config.json (~/.config/gantry/config.json).
  gantry login --url https://gantry.example.com --profile prod < key.txt`,
  async run(ctx) {
    const path = profilePath();
    const file = readProfileFile(path, (t) => ctx.out.note(t));
    const { name } = profileName({ profile: ctx.str('profile') }, process.env, file);
    if (!PROFILE_NAME.test(name))
      throw new UsageError(
        `the profile name ${shown(name)} is not one: 1 to 64 letters, digits, dots, dashes and underscores`,
      );
    const existing = Object.hasOwn(file.profiles, name) ? file.profiles[name] : undefined;
    const url = ctx.str('url') || process.env.GANTRY_URL || existing?.url || DEFAULT_URL;
    const key = ctx.str('api-key') || process.env.GANTRY_API_KEY || (await readSecret('API key: '));
    if (!key) throw new UsageError('no API key given (--api-key, GANTRY_API_KEY or stdin)');
    const api = new ApiClient(url, key);
    try {
      await api.get('/v2/pods');
    } catch (err) {
      if (err instanceof CliError) throw new CliError(err.exitCode, `the key was not saved: ${err.message}`);
      throw err;
    }
    file.profiles[name] = { ...existing, url: api.baseUrl, apiKey: key };
    writeProfileFile(path, { ...file, current: name });
    ctx.out.show(
      { profile: name, url: api.baseUrl, path },
      () => `saved profile "${name}" (${api.baseUrl}) in ${path}`,
    );
    return EXIT.ok;
  },
};
