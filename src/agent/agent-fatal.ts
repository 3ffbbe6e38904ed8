/**
 * Why the agent gives up, with the exit status `gantry agent` ends with: 2 for what the operator
 * must fix before trying again (a join token that is not valid, a bad data dir), 3 when the
 * control plane refuses the host's credential (revoked), 1 for what may pass (no engine yet).
 * A service manager restarts on 1 and not on 2 or 3 (docs/fleet.md has a unit file).
 */
export class AgentFatal extends Error {
  override readonly name = 'AgentFatal';
  constructor(
    message: string,
    readonly exitCode: 1 | 2 | 3,
  ) {
    super(message);
  }
}

export const JOIN_TOKEN_INVALID_MESSAGE =
  'the join token is not valid (unknown, used or expired): create a new one with gantry hosts token create';
