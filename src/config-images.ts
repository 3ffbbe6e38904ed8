/**
 * The `images` map of the config: how the process runtime runs an image reference. The Docker
 * runtime runs the image itself and reads only an entry's `health`.
 */
import type { ImageSpec } from './domain/image-spec.js';
import { bool, fail, isObj, num } from './config-values.js';

export type { HealthProbe, ImageSpec } from './domain/image-spec.js';

/** @param options.commandRequired whether every entry must name a command (the process runtime's) @default true */
export function parseImages(raw: unknown, options: { commandRequired?: boolean } = {}): Record<string, ImageSpec> {
  const commandRequired = options.commandRequired ?? true;
  if (raw === undefined) return {};
  if (!isObj(raw))
    fail('images must be a mapping of image reference → { command, cwd, env, tenantArgs, tenantEnv, health }');
  // No prototype: a tenant's image name (`constructor`, `__proto__`) must find nothing but mappings.
  const out: Record<string, ImageSpec> = Object.create(null) as Record<string, ImageSpec>;
  for (const [ref, value] of Object.entries(raw)) {
    if (!isObj(value)) fail(`images["${ref}"] must be a mapping`);
    const command = value.command ?? (commandRequired ? undefined : []);
    if (
      !Array.isArray(command) ||
      (commandRequired && command.length === 0) ||
      !command.every((c) => typeof c === 'string')
    )
      fail(`images["${ref}"].command must be a non-empty list of strings`);
    const spec: ImageSpec = { command: command };
    if (value.cwd !== undefined) {
      if (typeof value.cwd !== 'string') fail(`images["${ref}"].cwd must be a string`);
      spec.cwd = value.cwd;
    }
    if (value.env !== undefined) {
      if (!isObj(value.env)) fail(`images["${ref}"].env must be a mapping`);
      spec.env = Object.fromEntries(Object.entries(value.env).map(([k, v]) => [k, String(v)]));
    }
    if (value.tenantArgs !== undefined) spec.tenantArgs = bool(value.tenantArgs, `images["${ref}"].tenantArgs`, true);
    if (value.tenantEnv !== undefined) {
      const patterns = value.tenantEnv;
      if (
        !Array.isArray(patterns) ||
        !patterns.every((p) => typeof p === 'string' && /^(?:[A-Za-z_][A-Za-z0-9_]*\*?|\*)$/.test(p))
      )
        fail(`images["${ref}"].tenantEnv must be a list of variable names or NAME_PREFIX* patterns`);
      spec.tenantEnv = patterns as string[];
    }
    if (value.health !== undefined) {
      const h = value.health;
      if (!isObj(h)) fail(`images["${ref}"].health must be a mapping`);
      const type = h.type ?? 'http';
      if (type !== 'http' && type !== 'tcp') fail(`images["${ref}"].health.type must be http or tcp`);
      const port = num(h.port, `images["${ref}"].health.port`, NaN);
      if (!Number.isInteger(port)) fail(`images["${ref}"].health.port must name the private port to probe`);
      spec.health = {
        type,
        port,
        path: typeof h.path === 'string' ? h.path : '/',
        intervalMs: num(h.intervalMs, 'health.intervalMs', 200),
        timeoutMs: num(h.timeoutMs, 'health.timeoutMs', 60_000),
      };
    }
    out[ref] = spec;
  }
  return out;
}

/** Interpreters that take code on their command line (`-c`, `-e`, `-r`): a tenant's args would run it. */
const INTERPRETER =
  /^(?:python[0-9.]*|node|nodejs|deno|bun|perl[0-9.]*|ruby[0-9.]*|php[0-9.]*|lua[0-9.]*|bash|sh|dash|zsh|ksh|java|Rscript|R|env|uv|npx)$/;

/**
 * A mapping whose command is an interpreter followed by options only (no script) and that takes
 * tenant args: those args would be the interpreter's, so a tenant could hand it code to run.
 */
export function bareInterpreterWarnings(images: Record<string, ImageSpec>): string[] {
  const out: string[] = [];
  for (const [ref, spec] of Object.entries(images)) {
    const [file = '', ...rest] = spec.command;
    if (spec.tenantArgs === false || !INTERPRETER.test(file.split('/').pop() ?? '')) continue;
    if (rest.every((arg) => arg.startsWith('-'))) {
      out.push(
        `images["${ref}"] maps to the bare interpreter "${spec.command.join(' ')}": a tenant's args would be its arguments and could run any code; name a script in the command, or set tenantArgs: false`,
      );
    }
  }
  return out;
}

/** What the Docker runtime does not read (it runs the image as built): each entry's keys other than `health`. */
export function dockerImageWarnings(images: Record<string, ImageSpec>): string[] {
  const out: string[] = [];
  for (const [ref, spec] of Object.entries(images)) {
    const unused = (['command', 'cwd', 'env', 'tenantArgs', 'tenantEnv'] as const).filter((k) =>
      k === 'command' ? spec.command.length > 0 : spec[k] !== undefined,
    );
    if (unused.length > 0)
      out.push(
        `images["${ref}"].${unused.join(', .')} ${unused.length === 1 ? 'is' : 'are'} not used by the docker runtime, which runs the image as built (only health is read)`,
      );
  }
  return out;
}
