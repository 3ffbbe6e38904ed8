import { ApiError } from '../domain/errors.js';
import type { Runtime } from './runtime.js';

/**
 * Refuses, with 400 ENV_NOT_ALLOWED naming the variable, a tenant `env` the runtime would not pass
 * to an instance of `image`. Called by every service where tenant env enters; a runtime without
 * `refusedEnv` (one that isolates env) accepts all.
 */
export function assertEnvAllowed(
  runtime: Pick<Runtime, 'refusedEnv'> | undefined,
  env: Record<string, string>,
  image: string,
): void {
  const refusal = runtime?.refusedEnv?.(env, image);
  if (!refusal) return;
  throw new ApiError(
    'ENV_NOT_ALLOWED',
    `env variable "${refusal.name}" is not allowed: ${refusal.reason}. This server runs instances as local processes of its own user (the process runtime), so it refuses variables that could change what an instance runs; remove it from env.`,
  );
}
