/**
 * The process runtime isolates nothing between accounts: an instance is a process of the server's
 * own user, on the host's network, with the data dir (database, secret key, other instances'
 * folders) readable to it. So a deployment on it serves one account unless the operator opts in;
 * the server refuses to start with a second account, and `gantry accounts create` refuses to make
 * one. The Docker runtime, which isolates instances, lifts this.
 */

/** A refusal meant for the operator as it stands (the CLI prints its message without a stack). */
export class MultiAccountRefused extends Error {
  override readonly name = 'MultiAccountRefused';
}

/** How an operator accepts the risk, quoted in every refusal. */
export const MULTI_ACCOUNT_OPT_IN =
  'set runtime.process.allowMultipleAccounts: true in the config file (or GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT=true) to accept that every account can then reach the host and the other accounts';

const WHY = 'the process runtime runs every instance as a process of the server\'s own user, on the host\'s network, with the data dir (database, secret key) within reach, so it cannot keep accounts apart';

/** The refusal of a server start with `accounts` accounts, or null when it may start. */
export function multiAccountStartRefusal(accounts: number, runtimeName: string, allowMultipleAccounts: boolean): string | null {
  if (runtimeName !== 'process' || allowMultipleAccounts || accounts <= 1) return null;
  return `refusing to start: this deployment has ${accounts} accounts, and ${WHY}. Remove the extra accounts, or ${MULTI_ACCOUNT_OPT_IN}.`;
}

/** The refusal of creating one more account next to `existing` ones, or null when it may be created. */
export function multiAccountCreateRefusal(existing: number, runtimeName: string, allowMultipleAccounts: boolean): string | null {
  if (runtimeName !== 'process' || allowMultipleAccounts || existing < 1) return null;
  return `refusing to create a second account: ${WHY}. Keep to one account, or ${MULTI_ACCOUNT_OPT_IN}.`;
}
