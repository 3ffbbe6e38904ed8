import type { Logger } from 'pino';
import { installCommand } from '../fleet/agent-downloads.js';
import { versionSkewMessage, versionVerdict } from '../fleet/agent-versions.js';
import type { JoinAnswer } from '../fleet/protocol.js';
import { AgentFatal } from './agent-fatal.js';

/**
 * The agent's side of the version rule (src/fleet/agent-versions.ts), on the join's answer: a
 * control plane too far from this agent ends it (status 2) with both versions and the command
 * that installs the agent the control plane serves. A control plane too old to refuse has already
 * recorded the host: the message says to revoke it.
 */
export function checkControlPlaneVersion(
  agentVersion: string,
  answer: JoinAnswer,
  server: string,
  logger: Logger,
): void {
  const theirs = answer.controlPlaneVersion;
  if (theirs === undefined) {
    logger.warn(
      { server },
      'the control plane does not say its version (older than 0.2): its answers are taken as they come',
    );
    return;
  }
  const verdict = versionVerdict(agentVersion, theirs);
  if (verdict === 'unknown')
    logger.warn(
      { agentVersion, controlPlaneVersion: theirs },
      "the control plane's version cannot be compared with the agent's",
    );
  if (verdict !== 'incompatible') return;
  throw new AgentFatal(
    `${versionSkewMessage(agentVersion, theirs, installCommand(server, 'gjt_…'))}. The control plane recorded this host as ${answer.hostId} before this agent checked: revoke it (gantry hosts revoke ${answer.hostId}) and join again with a new token.`,
    2,
  );
}
