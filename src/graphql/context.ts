import type { Principal } from '../accounts/accounts-service.js';
import type { TransportServices } from '../transport/services.js';

/** What every resolver gets: the services and the authenticated caller. */
export interface GraphqlContext {
  services: TransportServices;
  principal: Principal;
}

/** `[{key, value}]` (the GraphQL env shape) → an env object; a null value is the empty string. */
export const envFromPairs = (
  pairs: ReadonlyArray<{ key: string; value?: string | null } | null> | null | undefined,
): Record<string, string> =>
  Object.fromEntries(
    (pairs ?? [])
      .filter((p): p is { key: string; value?: string | null } => p !== null)
      .map((p) => [p.key, p.value ?? '']),
  );

/** An env object → `[{key, value}]`. */
export const envToPairs = (env: Record<string, string>): Array<{ key: string; value: string }> =>
  Object.entries(env).map(([key, value]) => ({ key, value }));
