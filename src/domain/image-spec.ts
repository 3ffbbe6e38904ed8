/**
 * An entry of the config's `images` map, as the runtimes read it: how the process runtime runs an
 * image reference, and the readiness probe every runtime applies. Parsed by `src/config-images.ts`.
 */

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

/** How an instance is judged ready. */
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
