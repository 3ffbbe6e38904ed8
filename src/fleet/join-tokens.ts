/** One-time join tokens (docs/fleet.md "Identity"): made by the service and by the CLI alike. */
import type { Catalog, Cloud } from '../domain/catalog.js';
import { ApiError } from '../domain/errors.js';
import { hashSecret, newJoinToken } from './host-secrets.js';
import type { HostStore } from './host-store.js';

/** Longest life a join token may be given. */
export const MAX_JOIN_TOKEN_TTL_MS = 30 * 86_400_000;

export interface CreatedJoinToken {
  /** `gjt_…`: shown once, stored only hashed */
  token: string;
  dataCenterId: string;
  cloud: Cloud;
  expiresAt: number;
}

/** Stores a new one-time token: the data center must be in the catalog (default: its first), the life from 1 s to 30 days. */
export async function createJoinToken(
  store: Pick<HostStore, 'insertJoinToken'>,
  catalog: Catalog,
  now: number,
  options: { dataCenterId?: string | null; cloud?: Cloud; ttlMs: number },
): Promise<CreatedJoinToken> {
  const dataCenterId = options.dataCenterId ?? catalog.dataCenters[0]?.id;
  if (!dataCenterId || !catalog.dataCenters.some((d) => d.id === dataCenterId))
    throw new ApiError(
      'BAD_REQUEST',
      `Data center "${dataCenterId ?? ''}" is not in the catalog (known: ${catalog.dataCenters.map((d) => d.id).join(', ')}).`,
    );
  const cloud = options.cloud ?? 'SECURE';
  if (cloud !== 'SECURE' && cloud !== 'COMMUNITY')
    throw new ApiError('BAD_REQUEST', `Cloud must be SECURE or COMMUNITY (got "${String(cloud)}").`);
  if (!Number.isFinite(options.ttlMs) || options.ttlMs < 1000 || options.ttlMs > MAX_JOIN_TOKEN_TTL_MS)
    throw new ApiError('BAD_REQUEST', `A join token lives from 1 s to 30 days (got ${options.ttlMs} ms).`);
  const token = newJoinToken();
  const expiresAt = now + options.ttlMs;
  await store.insertJoinToken({ hash: hashSecret(token), dataCenterId, cloud, createdAt: now, expiresAt });
  return { token, dataCenterId, cloud, expiresAt };
}
