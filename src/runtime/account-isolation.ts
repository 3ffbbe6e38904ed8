/**
 * How many accounts a deployment may serve. A runtime that cannot keep accounts apart serves one
 * unless the operator opts in: the server refuses to start with a second account, and `gantry
 * accounts create` refuses to make one. The rules read the conditions the runtime's module
 * declares for the deployment (`IsolationConditions` below), never the runtime's name.
 * Two states cannot keep accounts apart:
 *
 * - instances share the host (no networks of their own, or not hardened: the process runtime,
 *   whose instance is a process of the server's own user, on the host's network, with the data
 *   dir — database, secret key, other instances' folders — within reach);
 * - serverless workers use the host's network, which they do when the job URL they are given is
 *   on loopback (domain/worker-network.ts decides it): a worker then reaches everything listening
 *   on the host's loopback (the database, Gantry's own API, other accounts' published ports).
 *   Serving the job API on a non-loopback address puts workers on networks of their own and
 *   lifts the rule.
 *
 * Each state has its own opt-in, so accepting one risk never accepts the other. What the runtime
 * could not put in place once it attached (the firewall, `Runtime.isolationGaps()`) refuses too.
 */
import { workerNetworkMode } from '../domain/worker-network.js';
import type { IsolationGap } from './runtime.js';

/** A refusal meant for the operator as it stands (the CLI prints its message without a stack). */
export class MultiAccountRefused extends Error {
  override readonly name = 'MultiAccountRefused';
}

/**
 * Why a deployment cannot keep accounts apart: its instances share the host (no networks of their
 * own, or no hardening: the process runtime), or its workers are on the host's network.
 */
export type SharedReach = 'shared-host' | 'host-network';

/** What decides whether a deployment keeps accounts apart: its runtime's conditions (its module's `isolation(config)`) and the job URL. */
/**
 * What a deployment on a runtime does to keep accounts apart, for the rules of
 * this file (which judge from these, never from the kind): with own networks
 * and hardening, a job URL off loopback (workers then get networks of their own) and the firewall
 * installed (`Runtime.isolationGaps()` says when it is not), accounts are kept apart.
 */
export interface IsolationConditions {
  /** Each account's instances get networks of their own (else they share the host's). */
  ownNetworks: boolean;
  /** Instances run hardened: their own user and filesystem, no raw sockets or devices, away from the data dir. */
  hardening: boolean;
  /** The operator accepted that instances share the host (`runtime.process.allowMultipleAccounts`). */
  acceptSharedHost: boolean;
  /** The operator accepted workers on the host's network (`runtime.docker.allowMultipleAccountsOnHostNetwork`). */
  acceptHostNetwork: boolean;
}

export interface AccountIsolation extends IsolationConditions {
  /** The job URL serverless workers are given (`server.publicJobUrl`). */
  workerJobUrl: string;
}

/** The deployment `config` describes, on a runtime whose module answers `conditions` for it. */
export function accountIsolationOf(
  conditions: IsolationConditions,
  config: { server: { publicJobUrl: string } },
): AccountIsolation {
  return { ...conditions, workerJobUrl: config.server.publicJobUrl };
}

/** Why the deployment cannot keep accounts apart; null when it can. Opt-ins and gaps aside. */
export function sharedReach(
  d: Pick<AccountIsolation, 'ownNetworks' | 'hardening' | 'workerJobUrl'>,
): SharedReach | null {
  if (!d.ownNetworks || !d.hardening) return 'shared-host';
  // Workers given a loopback job URL share the host's network to reach it.
  if (workerNetworkMode(d.workerJobUrl) === 'host') return 'host-network';
  return null;
}

/**
 * Whether the deployment keeps accounts apart now: instances on networks of their own and
 * hardened, workers given a job URL off loopback, and nothing missing that the runtime should
 * have put in place (`gaps`, `Runtime.isolationGaps()`: the firewall installed, no instance left
 * on a shared network).
 */
export function isolatesAccounts(d: AccountIsolation, gaps: readonly IsolationGap[]): boolean {
  return sharedReach(d) === null && gaps.length === 0;
}

/** The shared reach the operator has not accepted, or null when a second account may be served. */
function unacceptedReach(d: AccountIsolation): SharedReach | null {
  const reach = sharedReach(d);
  if (reach === 'shared-host' && d.acceptSharedHost) return null;
  if (reach === 'host-network' && d.acceptHostNetwork) return null;
  return reach;
}

const PROCESS_WHY =
  "the process runtime runs every instance as a process of the server's own user, on the host's network, with the data dir (database, secret key) within reach, so it cannot keep accounts apart";
const PROCESS_OPT_IN =
  'set runtime.process.allowMultipleAccounts: true in the config file (or GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT=true) to accept that every account can then reach the host and the other accounts';

const DOCKER_OPT_IN =
  "set runtime.docker.allowMultipleAccountsOnHostNetwork: true in the config file (or GANTRY_DOCKER_HOST_NETWORK_MULTI_ACCOUNT=true) to accept that every account's workers can then reach the host's loopback services";
const DOCKER_OWN_NETWORK =
  "serve the job API on an address workers reach from a network of their own: listen on a non-loopback address (gantry serve --host, GANTRY_HOST or server.host; the job URL follows it), or listen on 0.0.0.0 and set the job URL workers get to the host's address (GANTRY_PUBLIC_JOB_URL or server.publicJobUrl); server.jobPort (GANTRY_JOB_PORT) gives the job API a listener of its own";

/** The URL's host and port, never more of it (no path, query or credentials in a message). */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

const dockerWhy = (workerJobUrl: string): string =>
  `the docker runtime puts serverless workers on the host's network while the job URL they are given (${hostOf(workerJobUrl)}) is on loopback, and there a worker reaches everything listening on the host's loopback (the database, Gantry's own API, other accounts' published ports), so it cannot keep accounts apart`;

/** The refusal of a server start with `accounts` accounts, or null when it may start. */
export function multiAccountStartRefusal(accounts: number, deployment: AccountIsolation): string | null {
  const reach = accounts > 1 ? unacceptedReach(deployment) : null;
  if (reach === null) return null;
  const prefix = `refusing to start: this deployment has ${accounts} accounts, and`;
  if (reach === 'shared-host') return `${prefix} ${PROCESS_WHY}. Remove the extra accounts, or ${PROCESS_OPT_IN}.`;
  return `${prefix} ${dockerWhy(deployment.workerJobUrl)}. Remove the extra accounts, ${DOCKER_OWN_NETWORK}, or ${DOCKER_OPT_IN}.`;
}

/** The refusal of creating one more account next to `existing` ones, or null when it may be created. */
export function multiAccountCreateRefusal(existing: number, deployment: AccountIsolation): string | null {
  const reach = existing > 0 ? unacceptedReach(deployment) : null;
  if (reach === null) return null;
  const prefix = 'refusing to create a second account:';
  if (reach === 'shared-host') return `${prefix} ${PROCESS_WHY}. Keep to one account, or ${PROCESS_OPT_IN}.`;
  // `gantry accounts` reads no --host: what it knows of the job URL comes from the file and the environment.
  return `${prefix} ${dockerWhy(deployment.workerJobUrl)}. Keep to one account, ${DOCKER_OWN_NETWORK}, or ${DOCKER_OPT_IN}. gantry accounts reads the job URL from the config file and the environment, not from gantry serve's flags.`;
}

const FIREWALL_FIX =
  "run gantry serve where it may change the firewall of the engine's host (as root, or with CAP_NET_ADMIN), set runtime.docker.firewall.command to a command that may (sudo -n; nsenter --net=… for an engine in another network namespace), or set runtime.docker.firewall.mode: off (GANTRY_DOCKER_FIREWALL=off) to accept that containers reach the services of their host";
const SHARED_FIX =
  "stop and start those instances (a start puts an instance on its account's network), or keep to one account until they are";

/**
 * The refusal of a server start given what the runtime could not put in place (`gaps`, known once
 * it attached), or null. A missing firewall refuses a deployment set up to keep accounts apart (its
 * workers off the host's network) even with one account: a second one may be created while it
 * runs. An instance left on a shared network matters only with a second account.
 */
export function isolationGapRefusal(
  accounts: number,
  deployment: AccountIsolation,
  gaps: readonly IsolationGap[],
): string | null {
  const isolating = sharedReach(deployment) === null;
  const blocking = gaps.filter((g) => accounts > 1 || (g.kind === 'firewall' && isolating));
  if (blocking.length === 0) return null;
  const fixes = [...new Set(blocking.map((g) => (g.kind === 'firewall' ? FIREWALL_FIX : SHARED_FIX)))];
  const who =
    accounts > 1
      ? `this deployment has ${accounts} accounts`
      : 'this deployment serves workers off the host network to keep accounts apart';
  return `refusing to start: ${who}, and ${blocking.map((g) => g.detail).join('; ')}. To go on, ${fixes.join('; and ')}.`;
}
