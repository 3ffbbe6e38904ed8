/**
 * How the agent speaks to the control plane (docs/fleet.md, `/agent/v1`), apart from HTTP so that
 * the agent's logic (agent-core.ts) is tested with a scripted one. The HTTP one is
 * http-agent-transport.ts.
 */
import type { JoinAnswer, JoinRequest, Operation, ReportAnswer, ReportRequest } from '../fleet/protocol.js';

export interface AgentTransport {
  /** Joins with a one-time token; answers the host's identity and credential. */
  join(server: string, body: JoinRequest): Promise<JoinAnswer>;
  report(server: string, credential: string, body: ReportRequest): Promise<ReportAnswer>;
  /**
   * The host's operations with `seq > after`, oldest first; the control plane waits up to
   * `waitMs` for one. Rejects with `signal`'s reason when it aborts.
   */
  operations(
    server: string,
    credential: string,
    query: { after: number; waitMs: number },
    signal: AbortSignal,
  ): Promise<Operation[]>;
}

/**
 * Nothing answered at the server, or not sanely (no answer in time, a 5xx, a 429, a body that is
 * not the protocol's): the agent backs off and tries the next server.
 */
export class ControlPlaneUnreachable extends Error {
  override readonly name = 'ControlPlaneUnreachable';
}

/** The control plane answered a 4xx problem: `code` is its problem's `code`. */
export class ControlPlaneRefusal extends Error {
  override readonly name = 'ControlPlaneRefusal';
  constructor(
    readonly status: number,
    readonly code: string | null,
    readonly detail: string,
  ) {
    super(`the control plane answered ${status}${code ? ` ${code}` : ''}: ${detail}`);
  }
}
