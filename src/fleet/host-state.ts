/** Whether a joined host can be used (docs/fleet.md "Heartbeats"). Pure: `now` comes in. */

export type HostState = 'available' | 'unreachable' | 'revoked';

/**
 * `revoked` once revoked; `unreachable` when its agent has not been heard from for longer than
 * `heartbeatTimeoutMs` (or never was, since joining that long ago); `available` otherwise.
 */
export function hostState(
  host: { revokedAt: number | null; joinedAt: number },
  lastSeenAt: number | null,
  now: number,
  heartbeatTimeoutMs: number,
): HostState {
  if (host.revokedAt !== null) return 'revoked';
  return now - (lastSeenAt ?? host.joinedAt) > heartbeatTimeoutMs ? 'unreachable' : 'available';
}
