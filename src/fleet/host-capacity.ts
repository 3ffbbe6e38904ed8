/**
 * What an agent may say about its host (docs/fleet.md "Capacity"), checked before anything is
 * stored: figures a real machine can have, GPUs of one model the catalog knows, CPU flavors of the
 * catalog. Pure: the catalog comes in, a normalized `HostCapacity` or a 400 CAPACITY_INVALID
 * naming every field at fault goes out. Also maps a joined host onto the inventory's `Host`.
 */
import { isIP } from 'node:net';
import type { Catalog, Cloud, Host } from '../domain/catalog.js';
import { ApiError } from '../domain/errors.js';
import { catalogGpuType } from '../runtime/docker/discover-host.js';
import type { HostCapacity } from './protocol.js';

/** Bounds of a believable host (docs/fleet.md). */
const CAPACITY_BOUNDS = {
  vcpus: [1, 4096],
  memoryGb: [0.5, 65_536],
  diskGb: [0, 1_048_576],
  gpus: 64,
  gpuMemoryMb: [1, 1_048_576],
  cpuFlavors: 32,
  notes: 50,
  noteLength: 1000,
  /** portRange: within these ports, at least 1 and at most `ports` of them */
  portRange: [1024, 65_535],
  ports: 20_000,
} as const;

const GPU_UUID = /^GPU-[0-9a-fA-F-]{1,64}$/;
const CUDA_VERSION = /^\d{1,3}\.\d{1,3}$/;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
/** A value quoted back in an error, short and on one line (never more than a few characters of what was sent). */
const shown = (v: unknown): string => {
  const text =
    typeof v === 'string' ? JSON.stringify(v) : v === undefined ? 'nothing' : (JSON.stringify(v) ?? typeof v);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
};

/** Collects violations, each naming its field. */
class Violations {
  readonly list: string[] = [];
  add(field: string, rule: string, value: unknown): void {
    this.list.push(`${field} ${rule} (got ${shown(value)})`);
  }
  number(obj: Obj, key: string, field: string, [min, max]: readonly [number, number], integer: boolean): number {
    const v = obj[key];
    if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v)) || v < min || v > max) {
      this.add(field, `must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`, v);
      return min;
    }
    return v;
  }
  throwIfAny(): void {
    if (this.list.length === 0) return;
    throw new ApiError('CAPACITY_INVALID', `The host description cannot be real: ${this.list.join('; ')}.`, {
      errors: this.list,
    });
  }
}

/** The capacity an agent reported, normalized (unknown fields dropped), or 400 CAPACITY_INVALID naming each field at fault. */
export function validateCapacity(raw: unknown, catalog: Catalog, field = 'capacity'): HostCapacity {
  const v = new Violations();
  if (!isObj(raw)) {
    v.add(field, 'must be an object', raw);
    v.throwIfAny();
  }
  const c = raw as Obj;
  const vcpus = v.number(c, 'vcpus', `${field}.vcpus`, CAPACITY_BOUNDS.vcpus, true);
  const memoryGb = v.number(c, 'memoryGb', `${field}.memoryGb`, CAPACITY_BOUNDS.memoryGb, false);
  const diskGb = v.number(c, 'diskGb', `${field}.diskGb`, CAPACITY_BOUNDS.diskGb, false);

  const gpus: HostCapacity['gpus'] = [];
  if (!Array.isArray(c.gpus)) v.add(`${field}.gpus`, 'must be a list', c.gpus);
  else if (c.gpus.length > CAPACITY_BOUNDS.gpus)
    v.add(`${field}.gpus`, `must hold at most ${CAPACITY_BOUNDS.gpus} GPUs`, `${c.gpus.length} GPUs`);
  else {
    const uuids = new Set<string>();
    let model: string | null = null;
    c.gpus.forEach((g: unknown, i: number) => {
      const at = `${field}.gpus[${i}]`;
      if (!isObj(g)) return v.add(at, 'must be an object { uuid, name, memoryMb }', g);
      const uuid = g.uuid;
      if (typeof uuid !== 'string' || !GPU_UUID.test(uuid))
        v.add(`${at}.uuid`, 'must be "GPU-" followed by hex digits and dashes', uuid);
      else if (uuids.has(uuid.toLowerCase())) v.add(`${at}.uuid`, 'appears twice', uuid);
      else uuids.add(uuid.toLowerCase());
      const name = g.name;
      const type = typeof name === 'string' && name.length <= 128 ? catalogGpuType(name, catalog.gpuTypes) : null;
      if (!type) v.add(`${at}.name`, 'must be a GPU model the catalog knows (catalog.gpuTypes)', name);
      else if (model !== null && type.id !== model)
        v.add(`${at}.name`, `must be the host's one GPU model, ${model}`, name);
      else model = type.id;
      const memoryMb = v.number(g, 'memoryMb', `${at}.memoryMb`, CAPACITY_BOUNDS.gpuMemoryMb, true);
      if (typeof uuid === 'string' && typeof name === 'string') gpus.push({ uuid, name, memoryMb });
    });
  }

  const cuda = c.cudaVersion;
  if (cuda !== null && (typeof cuda !== 'string' || !CUDA_VERSION.test(cuda)))
    v.add(`${field}.cudaVersion`, 'must be major.minor (e.g. "12.4") or null', cuda);
  if (c.gpuMode !== 'nvidia' && c.gpuMode !== 'env-only')
    v.add(`${field}.gpuMode`, 'must be "nvidia" or "env-only"', c.gpuMode);

  const cpuFlavors: string[] = [];
  if (!Array.isArray(c.cpuFlavors) || c.cpuFlavors.length > CAPACITY_BOUNDS.cpuFlavors)
    v.add(
      `${field}.cpuFlavors`,
      `must be a list of at most ${CAPACITY_BOUNDS.cpuFlavors} CPU flavor ids`,
      c.cpuFlavors,
    );
  else
    c.cpuFlavors.forEach((f: unknown, i: number) => {
      if (typeof f !== 'string' || !catalog.cpuFlavors.some((k) => k.id === f))
        v.add(`${field}.cpuFlavors[${i}]`, 'must be a CPU flavor of the catalog', f);
      else if (!cpuFlavors.includes(f)) cpuFlavors.push(f);
    });

  const notes: string[] = [];
  if (c.notes !== undefined) {
    if (!Array.isArray(c.notes) || c.notes.length > CAPACITY_BOUNDS.notes)
      v.add(`${field}.notes`, `must be a list of at most ${CAPACITY_BOUNDS.notes} texts`, c.notes);
    else
      c.notes.forEach((n: unknown, i: number) => {
        if (typeof n !== 'string' || n.length > CAPACITY_BOUNDS.noteLength)
          v.add(`${field}.notes[${i}]`, `must be a text of at most ${CAPACITY_BOUNDS.noteLength} characters`, n);
        else notes.push(n);
      });
  }
  v.throwIfAny();
  return {
    vcpus,
    memoryGb,
    diskGb,
    gpus,
    cudaVersion: cuda as string | null,
    gpuMode: c.gpuMode as HostCapacity['gpuMode'],
    cpuFlavors,
    notes,
  };
}

/** Where a joining host says it is reached: an address clients can dial, and a port range it can publish. */
export function validateReachability(publicIp: string, portRange: readonly number[]): void {
  const v = new Violations();
  const family = isIP(publicIp);
  if (family === 0) v.add('publicIp', 'must be an IPv4 or IPv6 address', publicIp);
  else if (
    publicIp === '0.0.0.0' ||
    publicIp === '::' ||
    /^(22[4-9]|23\d|24\d|25[0-5])\./.test(publicIp) ||
    /^ff/i.test(publicIp)
  )
    v.add('publicIp', 'must be an address clients can reach (not unspecified, multicast or broadcast)', publicIp);
  const [low, high] = CAPACITY_BOUNDS.portRange;
  const [first, last] = portRange;
  const port = (p: unknown): p is number => typeof p === 'number' && Number.isInteger(p) && p >= low && p <= high;
  if (portRange.length !== 2 || !port(first) || !port(last) || first > last)
    v.add('portRange', `must be [first, last]: two ports from ${low} to ${high}, first <= last`, portRange);
  else if (last - first + 1 > CAPACITY_BOUNDS.ports)
    v.add('portRange', `must span at most ${CAPACITY_BOUNDS.ports} ports`, portRange);
  v.throwIfAny();
}

/** Whether two capacities say the same (the agent sends its capacity again only when it changed, but may resend it). */
export const sameCapacity = (a: HostCapacity, b: HostCapacity): boolean => JSON.stringify(a) === JSON.stringify(b);

/** A joined host as the inventory and placement see it. */
export interface JoinedHostView {
  id: string;
  dataCenterId: string;
  cloud: Cloud;
  publicIp: string;
  portRange: [number, number];
  capacity: HostCapacity;
}

/**
 * The inventory's `Host` for a joined host: its GPUs as the catalog type they are (validated at
 * join, so the name maps), by index in the order the agent reported them.
 */
export function inventoryHost(host: JoinedHostView, catalog: Catalog): Host {
  const { capacity } = host;
  const first = capacity.gpus[0];
  const gpuTypeId = first ? (catalogGpuType(first.name, catalog.gpuTypes)?.id ?? null) : null;
  const gpus = gpuTypeId ? capacity.gpus : [];
  return {
    id: host.id,
    dataCenterId: host.dataCenterId,
    cloud: host.cloud,
    cudaVersion: gpuTypeId ? capacity.cudaVersion : null,
    gpuTypeId,
    gpuCount: gpus.length,
    cpuFlavors: [...capacity.cpuFlavors],
    vcpus: capacity.vcpus,
    memoryGb: capacity.memoryGb,
    diskGb: capacity.diskGb,
    portRange: [host.portRange[0], host.portRange[1]],
    publicIp: host.publicIp,
    gpuUuids: gpus.map((g) => g.uuid),
    gpuMode: capacity.gpuMode,
    notes: [...capacity.notes],
  };
}
