/**
 * The `images` map of the config: how the process runtime runs an image reference. The Docker
 * runtime runs the image itself and reads only an entry's `health`.
 */
import { bool, fail, isObj, num } from './config-values.js';

/** How the process runtime runs one image reference. */
export interface ImageSpec {
  /**
   * argv of the process; the pod's (or the worker template's) `args` string is appended, split on
   * whitespace. Tenant args come after the command, so map an image to a program or script, never
   * to a bare interpreter: with `["python3"]` or `["node"]` a tenant's `-c …` / `-e …` runs any
   * code as the server's user (the config warns about such a mapping); set `tenantArgs: false`
   * for a command that must not take any. Empty when the config's runtime is docker and the entry
   * names none (the container runs the image's own entrypoint).
   */
  command: string[];
  /** Working directory, relative to the config file's folder. @default the instance folder `<dataDir>/instances/<id>/` */
  cwd?: string;
  /** The operator's variables for this image: trusted and never screened; a tenant's `env` is layered over them. */
  env?: Record<string, string>;
  /**
   * Whether a tenant's `args` are appended to `command`. With false, an instance whose pod or
   * template sets args fails to start, saying so (rather than running without them). @default true
   */
  tenantArgs?: boolean;
  /**
   * Names a tenant's `env` may set for this image: exact names or `PREFIX*` patterns, e.g.
   * `["MODEL_*", "LOG_LEVEL"]`. It narrows the process runtime's deny list, never widens it
   * (`NODE_OPTIONS` stays refused even when listed); the platform's own variables always pass.
   * Any other name is refused at the API with 400 ENV_NOT_ALLOWED and dropped at spawn.
   * @default undefined (any name the deny list leaves)
   */
  tenantEnv?: string[];
  /** Readiness probe. Without one, an instance is RUNNING as soon as its process has spawned. */
  health?: HealthProbe;
}

export interface HealthProbe {
  /** `http` GETs `path` on the instance's public port for `port`; `tcp` connects to it. */
  type: 'http' | 'tcp';
  /** The private (container) port to probe; it must be one of the pod's ports. */
  port: number;
  /** @default "/" */
  path: string;
  /** @default 200 */
  intervalMs: number;
  /** Give up and mark the instance ERROR after this long. @default 60000 */
  timeoutMs: number;
}

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
