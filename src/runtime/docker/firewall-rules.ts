/**
 * What containers may reach on their host and beyond, as iptables rules (pure: the text given to
 * `iptables-restore`). Docker installs rules between its bridges and towards the internet, none
 * for a container calling its own host: without these, a container reaches every service the host
 * listens on (PostgreSQL, Gantry's API, sshd) through its bridge's gateway.
 *
 * Two chains per installation, entered only by traffic from its own bridges (the interface
 * wildcard every bridge it makes is named under, plus the named bridges of networks an earlier
 * version made):
 * - `GANTRY-<tag>-IN`, from INPUT (traffic to the host itself): replies to what the host opened,
 *   DNS, and the allowed destinations (the job API) pass; everything else is dropped.
 * - `GANTRY-<tag>-FWD`, from DOCKER-USER (FORWARD when the engine manages no iptables): replies,
 *   traffic between the bridges (Docker's own isolation then keeps accounts' bridges apart), DNS
 *   and the allowed destinations go on to Docker's rules; link-local (cloud metadata) and the
 *   private, shared and loopback ranges are dropped, unless an operator's `allow` entry lets them.
 *   Everything else (the internet) goes on too.
 * Dropped, not rejected: a refusal would tell a scanner the address is there.
 */

/** A destination containers may reach although it is on the host or a private address. */
export interface AllowedDestination {
  /** IPv4 CIDR (`10.0.0.5/32`, `10.1.0.0/16`) */
  cidr: string;
  /** a TCP port; null: every port and protocol */
  port: number | null;
}

export interface FirewallPolicy {
  /** the installation's tag in its chain names (5 hex digits of its namespace's hash) */
  tag: string;
  /** the interface name prefix of every bridge the installation makes (`gab12c`) */
  bridgePrefix: string;
  /** bridges of networks made before bridges were named (`br-0123456789ab`) */
  legacyBridges: readonly string[];
  allow: readonly AllowedDestination[];
}

/** Ranges no container reaches unless allowed: link-local (cloud metadata), private, shared (CGNAT), loopback, multicast, reserved. */
export const BLOCKED_RANGES = [
  '169.254.0.0/16',
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '0.0.0.0/8',
  '192.0.0.0/24',
  '198.18.0.0/15',
  '224.0.0.0/4',
  '240.0.0.0/4',
] as const;

const inputChain = (tag: string): string => `GANTRY-${tag}-IN`;
const forwardChain = (tag: string): string => `GANTRY-${tag}-FWD`;

/** The interfaces whose traffic the chains judge: `-i` arguments. */
const interfaces = (p: FirewallPolicy): string[] => [`${p.bridgePrefix}+`, ...p.legacyBridges];

function allowRules(chain: string, p: FirewallPolicy): string[] {
  const rules = [
    `-A ${chain} -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN`,
    `-A ${chain} -p udp -m udp --dport 53 -j RETURN`,
    `-A ${chain} -p tcp -m tcp --dport 53 -j RETURN`,
  ];
  for (const a of p.allow)
    rules.push(
      a.port === null
        ? `-A ${chain} -d ${a.cidr} -j RETURN`
        : `-A ${chain} -d ${a.cidr} -p tcp -m tcp --dport ${a.port} -j RETURN`,
    );
  return rules;
}

/**
 * The `iptables-restore --noflush` input that installs (or refreshes) the policy, given what
 * `iptables-save -t filter` printed: the chains are declared (so emptied) and filled again, jumps
 * an earlier install left are deleted before they are inserted anew, so installing twice leaves one
 * copy. The forward jump goes into DOCKER-USER, which Docker keeps first in FORWARD even as it adds
 * networks; an engine that manages no iptables has none, and FORWARD is used.
 */
export function firewallRestore(policy: FirewallPolicy, saved: string): string {
  const input = inputChain(policy.tag);
  const forward = forwardChain(policy.tag);
  const hook = /^:DOCKER-USER /m.test(saved) ? 'DOCKER-USER' : 'FORWARD';
  const lines = ['*filter'];
  for (const chain of [input, forward]) lines.push(`:${chain} - [0:0]`);
  // Earlier jumps into our chains, wherever they are: deleted, then inserted anew at the top.
  for (const line of saved.split('\n')) {
    const m = /^-A (\S+) (.* -j (\S+))$/.exec(line);
    if (m && (m[3] === input || m[3] === forward)) lines.push(`-D ${m[1]} ${m[2]}`);
  }
  for (const i of interfaces(policy).reverse()) {
    lines.push(`-I INPUT 1 -i ${i} -j ${input}`);
    lines.push(`-I ${hook} 1 -i ${i} -j ${forward}`);
  }
  lines.push(...allowRules(input, policy), `-A ${input} -j DROP`);
  lines.push(...allowRules(forward, policy));
  // Between the installation's bridges: Docker's isolation decides (it drops traffic between two
  // bridges; within one, an account's instances reach each other).
  for (const i of interfaces(policy)) lines.push(`-A ${forward} -o ${i} -j RETURN`);
  for (const cidr of BLOCKED_RANGES) lines.push(`-A ${forward} -d ${cidr} -j DROP`);
  lines.push('COMMIT', '');
  return lines.join('\n');
}
