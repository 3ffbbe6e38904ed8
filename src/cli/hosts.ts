import type { Config } from '../config.js';
import { iso } from '../domain/clock.js';
import { ApiError } from '../domain/errors.js';
import { FLEET_HOST_TOPIC } from '../fleet/fleet-relay.js';
import { createJoinToken, MAX_JOIN_TOKEN_TTL_MS } from '../fleet/join-tokens.js';
import { installCommand } from '../fleet/agent-downloads.js';
import { inventoryHost } from '../fleet/host-capacity.js';
import { hostState, type HostState } from '../fleet/host-state.js';
import type { HostRecord } from '../fleet/host-store.js';
import { notifyReplicasOnce } from '../store/notify-relay.js';
import { parseArgs, configFrom, storeOptions, UsageError } from './args.js';
import { withStore } from './with-store.js';
import { parseDuration } from './duration.js';

export const hostsHelp = `gantry hosts token create [--data-center ID] [--cloud SECURE|COMMUNITY] [--ttl 1h]
                                prints a one-time join token for \`gantry agent --token\`
gantry hosts list [--json]       joined hosts: capacity, instances, last heartbeat, state
gantry hosts revoke ID           revokes a host: its agent is refused from then on`;

/** `3 s ago`, `4 min ago`, `2 h ago`, `3 d ago`. */
function ago(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s} s ago`;
  if (s < 7200) return `${Math.floor(s / 60)} min ago`;
  if (s < 172_800) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

interface HostRow {
  host: HostRecord;
  instances: number;
  state: HostState;
}

function gpusOf(host: HostRecord, config: Config): { type: string | null; count: number } {
  const view = inventoryHost(host, config.catalog);
  return { type: view.gpuTypeId, count: view.gpuCount };
}

function table(rows: HostRow[], config: Config, now: number): string {
  const head = [
    'ID',
    'NAME',
    'DATA CENTER',
    'CLOUD',
    'GPUS',
    'VCPUS',
    'MEMORY',
    'DISK',
    'INSTANCES',
    'HEARTBEAT',
    'STATE',
  ];
  const lines = rows.map(({ host, instances, state }) => {
    const gpus = gpusOf(host, config);
    return [
      host.id,
      host.name,
      host.dataCenterId,
      host.cloud,
      gpus.type ? `${gpus.count} × ${gpus.type}` : '-',
      String(host.capacity.vcpus),
      `${host.capacity.memoryGb} GB`,
      `${host.capacity.diskGb} GB`,
      String(instances),
      host.lastReportAt === null ? 'never' : ago(now - host.lastReportAt),
      state,
    ];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  return [head, ...lines]
    .map((cells) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  '))
    .join('\n');
}

export async function hosts(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      ...storeOptions,
      'data-center': { type: 'string' },
      cloud: { type: 'string' },
      ttl: { type: 'string' },
      json: { type: 'boolean' },
      print: { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) return void console.log(hostsHelp);
  const [sub, arg, id] = positionals;
  const config = configFrom(values);
  if (sub === 'token' && arg !== 'create')
    throw new UsageError(
      'usage: gantry hosts token create [--data-center ID] [--cloud SECURE|COMMUNITY] [--ttl 1h] [--print command|token]',
    );
  if (sub !== 'token' && sub !== 'list' && sub !== 'revoke') throw new UsageError(hostsHelp);
  // checked before the store opens: a usage error leaves nothing behind
  const cloud = values.cloud ?? 'SECURE';
  if (cloud !== 'SECURE' && cloud !== 'COMMUNITY')
    throw new UsageError(`--cloud must be SECURE or COMMUNITY (got "${cloud}")`);
  const ttlMs = values.ttl === undefined ? config.agents.joinTokenTtlMs : parseDuration('--ttl', values.ttl);
  if (ttlMs < 1000 || ttlMs > MAX_JOIN_TOKEN_TTL_MS)
    throw new UsageError(`--ttl must be from 1s to 30d (got ${values.ttl})`);
  const print = values.print ?? (process.stdout.isTTY ? 'command' : 'token');
  if (print !== 'command' && print !== 'token')
    throw new UsageError(`--print must be command or token (got "${print}")`);
  const hostId = sub === 'revoke' ? arg : undefined;
  if (sub === 'revoke' && (!hostId || id !== undefined)) throw new UsageError('usage: gantry hosts revoke ID');

  await withStore(config, async ({ stores, db }) => {
    const store = stores.hosts;
    if (sub === 'token') {
      const created = await createJoinToken(store, config.catalog, Date.now(), {
        dataCenterId: values['data-center'] ?? null,
        cloud: cloud,
        ttlMs,
      });
      const { publicUrl } = config.server;
      const where = `A one-time join token for a host in ${created.dataCenterId} (${created.cloud}), good until ${iso(created.expiresAt)}`;
      if (/^https?:\/\/(127\.|localhost[:/]|\[::1\])/.test(publicUrl))
        console.error(
          `Note: server.publicUrl is ${publicUrl}, which a host cannot reach: set it (GANTRY_PUBLIC_URL) to the URL hosts reach this control plane at.`,
        );
      if (print === 'command') {
        console.log(installCommand(publicUrl, created.token));
        console.error(
          `${where}. Run the command above as root on a Linux host with Docker (docs/deploy.md, "Fleet: the one-line join"); it shows in gantry hosts list once joined.`,
        );
      } else {
        console.log(created.token);
        console.error(
          `${where}. On the host:\n  ${installCommand(publicUrl, `${created.token.slice(0, 8)}…`)}\nor, with Gantry installed there:\n  gantry agent --server ${publicUrl} --token ${created.token.slice(0, 8)}…`,
        );
      }
    } else if (sub === 'list') {
      const now = Date.now();
      const counts = await store.instanceCounts();
      const rows = (await store.listHosts()).map((host) => ({
        host,
        instances: host.revokedAt === null ? (counts.get(host.id) ?? 0) : 0,
        state: hostState(host, host.lastReportAt, now, config.agents.heartbeatTimeoutMs),
      }));
      if (values.json) {
        const out = rows.map(({ host: { credentialHash: _hash, ...host }, instances, state }) => ({
          ...host,
          gpuTypeId: gpusOf({ ...host, credentialHash: '' }, config).type,
          instances,
          state,
        }));
        return void console.log(JSON.stringify(out, null, 2));
      }
      if (rows.length === 0)
        return void console.log('no hosts have joined (gantry hosts token create, then gantry agent on the host)');
      console.log(table(rows, config, now));
    } else {
      const revoked = await store.revokeHost(hostId!, Date.now());
      if (!revoked) throw new ApiError('NOT_FOUND', `no live host with id "${hostId}" (gantry hosts list shows them)`);
      // replicas on PostgreSQL refuse it at once; a server on SQLite notices within a second
      await notifyReplicasOnce(db, FLEET_HOST_TOPIC, `revoked:${hostId}`);
      console.log(`revoked ${hostId}: its agent is refused from now on`);
    }
  });
}
