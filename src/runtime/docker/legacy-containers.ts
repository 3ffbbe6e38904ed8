/**
 * Containers an earlier Gantry started, found running at attach. They are adopted as they are,
 * and then brought onto the account isolation live:
 * - one on a network shared between accounts (the engine's default bridge, where every instance
 *   used to live) is connected to its account's network and disconnected from the shared one; the
 *   engine moves its published ports with it, and it keeps running;
 * - one created without the hardening (raw sockets, device nodes, no-new-privileges) cannot get it
 *   without a restart: it is reported, and gets it at its next start. Off the shared network, it
 *   can only forge or sniff traffic on its own account's segment.
 */
import type { Logger } from 'pino';
import type { DockerClient } from './docker-client.js';
import { LABEL, ownerOf } from './docker-names.js';
import type { ContainerSummary } from './engine-types.js';
import type { InstanceNetworks } from './instance-networks.js';

export interface LegacyReport {
  /** instances moved off a shared network onto their account's */
  moved: string[];
  /** instances still on a shared network (the move failed), with why */
  shared: Array<{ id: string; reason: string }>;
  /** instances running without the hardening until their next start */
  unhardened: string[];
}

const RUNNING = new Set(['running', 'paused', 'restarting']);

export async function adoptLegacy(
  containers: readonly ContainerSummary[],
  deps: { client: DockerClient; networks: InstanceNetworks | null; namespace: string; logger: Logger },
): Promise<LegacyReport> {
  const report: LegacyReport = { moved: [], shared: [], unhardened: [] };
  const ours = `gantry-${deps.namespace}-`;
  for (const c of containers) {
    const id = c.Labels?.[LABEL.instance];
    const owner = ownerOf(c.Labels);
    if (!id || !owner || !RUNNING.has(c.State)) continue;
    if (c.Labels?.[LABEL.hardened] !== '1') report.unhardened.push(id);
    if (!deps.networks || c.HostConfig?.NetworkMode === 'host') continue;
    const foreign = Object.keys(c.NetworkSettings?.Networks ?? {}).filter((n) => !n.startsWith(ours));
    if (foreign.length === 0) continue;
    try {
      const onOwn = Object.keys(c.NetworkSettings?.Networks ?? {}).some((n) => n.startsWith(ours));
      if (!onOwn)
        await deps.networks.join({ owner, network: null }, (joined) => deps.client.connectNetwork(joined.name, c.Id));
      for (const network of foreign) await deps.client.disconnectNetwork(network, c.Id);
      report.moved.push(id);
    } catch (err) {
      report.shared.push({ id, reason: (err as Error).message });
    }
  }
  if (report.moved.length > 0)
    deps.logger.warn(
      { instances: report.moved },
      "moved instances an earlier version started on a network shared between accounts onto their account's network (they kept running)",
    );
  for (const { id, reason } of report.shared)
    deps.logger.error({ instance: id, reason }, 'cannot move an instance off the network accounts share');
  if (report.unhardened.length > 0)
    deps.logger.warn(
      { instances: report.unhardened },
      "instances an earlier version started run without this version's container hardening (no raw sockets, no device nodes, no-new-privileges) until they are stopped and started again",
    );
  return report;
}
