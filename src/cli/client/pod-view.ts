/** The fields of the API's Pod (GET /v2/pods/{id}) the CLI reads; `--json` prints the whole answer. */
import { age, fields, orDash, table } from './output.js';

export interface SshEndpoint {
  host: string;
  port: number;
  username: string;
  command: string;
}

export interface Pod {
  id: string;
  name: string;
  status: string;
  actions: string[];
  image: string;
  gpu?: { id: string; count: number };
  cpu?: { id: string; vcpuCount: number; memory: number };
  cost: number;
  dataCenterId: string | null;
  ports: string[];
  ssh: { proxy: SshEndpoint | null; direct: SshEndpoint | null };
  /** each HTTP port through the pod HTTP proxy (docs/proxy.md); absent from older servers */
  httpProxy?: Array<{ port: number; url: string }>;
  createdAt: string;
  startedAt: string | null;
  statusReason: string | null;
  runtime: { ports?: { private: number; public: number | null; type: string; ip: string | null }[] } | null;
}

const machine = (p: Pod): string =>
  p.gpu ? `${p.gpu.count} × ${p.gpu.id}` : p.cpu ? `${p.cpu.id} ${p.cpu.vcpuCount} vCPU` : '-';

export function podTable(pods: Pod[]): string {
  if (pods.length === 0) return 'no pods (gantry pods create --help)';
  return table(
    ['ID', 'NAME', 'STATUS', 'MACHINE', '$/HR', 'IMAGE', 'AGE'],
    pods.map((p) => [p.id, p.name, p.status, machine(p), p.cost.toFixed(2), p.image, age(p.createdAt)]),
  );
}

export function podFields(p: Pod): string {
  const ports = (p.runtime?.ports ?? []).map(
    (x) => `${x.private}/${x.type}${x.public ? ` → ${x.ip ?? ''}:${x.public}` : ''}`,
  );
  return fields([
    ['id', p.id],
    ['name', p.name],
    ['status', p.status + (p.statusReason ? ` (${p.statusReason})` : '')],
    ['image', p.image],
    ['machine', machine(p)],
    ['data center', orDash(p.dataCenterId)],
    ['cost', `$${p.cost.toFixed(3)}/hr`],
    ['ports', ports.length ? ports.join(', ') : p.ports.length ? p.ports.join(', ') : '-'],
    ['ssh', p.ssh.proxy?.command ?? p.ssh.direct?.command ?? '-'],
    ['http', (p.httpProxy ?? []).map((h) => `${h.port} → ${h.url}`).join(', ') || '-'],
    ['actions', p.actions.join(', ') || '-'],
    ['created', p.createdAt],
    ['started', orDash(p.startedAt)],
  ]);
}
