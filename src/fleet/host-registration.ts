/**
 * A host's record written with its GPU claims, in one transaction: at its join, which spends a
 * one-time token, and when it reports a different capacity. What the host says it is, is checked
 * first (400 CAPACITY_INVALID naming each field): a refused join spends nothing and stores
 * nothing, a refused capacity changes nothing.
 */
import type { Catalog } from '../domain/catalog.js';
import type { Clock } from '../domain/clock.js';
import { ApiError } from '../domain/errors.js';
import { sameCapacity, validateCapacity, validateReachability } from './host-capacity.js';
import { claimGpus, withGpuClaims } from './host-gpus.js';
import { hashSecret, looksLikeJoinToken, newHostCredential, newHostId } from './host-secrets.js';
import type { HostRecord, HostStore } from './host-store.js';
import type { JoinRequest } from './protocol.js';

const joinTokenInvalid = (): ApiError =>
  new ApiError(
    'JOIN_TOKEN_INVALID',
    'The join token is unknown, already used or expired. Create a new one on the control plane: gantry hosts token create.',
  );

/**
 * Records a joining host: spends the token (401 JOIN_TOKEN_INVALID, one message whether unknown,
 * used or expired) and stores the host with its GPUs. Answers the record and the host's
 * credential (shown to the agent once; stored hashed).
 */
export async function registerHost(
  deps: { hosts: HostStore; catalog: Catalog; clock: Clock },
  request: JoinRequest,
): Promise<{ host: HostRecord; credential: string }> {
  const { hosts } = deps;
  const capacity = validateCapacity(request.capacity, deps.catalog);
  validateReachability(request.publicIp, request.portRange);
  if (!looksLikeJoinToken(request.token)) throw joinTokenInvalid();
  const hostId = newHostId();
  const credential = newHostCredential(hostId);
  const now = deps.clock.now();
  const host = await withGpuClaims(() =>
    hosts.withTransaction(async (tx) => {
      const place = await hosts.spendJoinToken(hashSecret(request.token), hostId, now, tx);
      if (!place) throw joinTokenInvalid();
      const record: HostRecord = {
        id: hostId,
        name: request.name,
        credentialHash: hashSecret(credential),
        dataCenterId: place.dataCenterId,
        cloud: place.cloud,
        publicIp: request.publicIp,
        portRange: [request.portRange[0], request.portRange[1]],
        capacity,
        agentVersion: request.agentVersion,
        joinedAt: now,
        lastReportAt: now,
        revokedAt: null,
      };
      await hosts.insertHost(record, tx);
      await claimGpus(hosts, hostId, capacity.gpus, tx);
      return record;
    }),
  );
  return { host, credential };
}

/**
 * Records a live host's reported capacity with its GPUs. Answers the host as it now is, or null
 * when nothing changed (the same capacity, a host unknown or revoked).
 */
export async function updateHostCapacity(
  deps: { hosts: HostStore; catalog: Catalog },
  hostId: string,
  raw: unknown,
): Promise<HostRecord | null> {
  const { hosts } = deps;
  const capacity = validateCapacity(raw, deps.catalog);
  const current = await hosts.getHost(hostId);
  if (!current || current.revokedAt !== null || sameCapacity(current.capacity, capacity)) return null;
  return withGpuClaims(() =>
    hosts.withTransaction(async (tx): Promise<HostRecord | null> => {
      if (!(await hosts.updateCapacity(hostId, capacity, tx))) return null;
      await claimGpus(hosts, hostId, capacity.gpus, tx);
      return { ...current, capacity };
    }),
  );
}
