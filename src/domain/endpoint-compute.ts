/**
 * What a serverless endpoint's workers run on and where: its CPU instances (RunPod's
 * `instanceIds`, `<flavor>-<vCPUs>-<GB of memory>` such as `cpu3g-4-16`: a CPU endpoint) and its
 * locations (country codes, or data-center ids such as `US-TX-3`). Pure.
 */
import type { CpuFlavor, DataCenter } from './catalog.js';

/** One CPU instance an endpoint's workers may be given: a flavor at one of its sizes. */
export interface CpuInstance {
  id: string;
  flavorId: string;
  vcpuCount: number;
  memoryGb: number;
}

/** The id of `flavor` at `vcpus` vCPUs: `<flavor>-<vCPUs>-<GB of memory>`. */
const cpuInstanceId = (flavor: Pick<CpuFlavor, 'id' | 'ramMultiplier'>, vcpus: number): string =>
  `${flavor.id}-${vcpus}-${vcpus * flavor.ramMultiplier}`;

const INSTANCE_ID = /^(.{1,64})-(\d{1,5})-(\d{1,7})$/;

/** The instance `id` names among the catalog's flavors, or why it names none (naming what would be valid). */
export function parseCpuInstanceId(id: string, flavors: readonly CpuFlavor[]): CpuInstance | string {
  const m = INSTANCE_ID.exec(id);
  const flavor = m ? flavors.find((f) => f.id === m[1]) : undefined;
  if (!m || !flavor) {
    const known = flavors.map((f) => f.id).join(', ');
    return m
      ? `"${id}": "${m[1]}" is not a CPU flavor (GET /v2/catalog/cpus lists them: ${known})`
      : `"${id}" is not a CPU instance id: <flavor>-<vCPUs>-<GB of memory>, e.g. "${flavors[0] ? cpuInstanceId(flavors[0], flavors[0].vcpuOptions[0] ?? 2) : 'cpu3c-2-4'}"`;
  }
  const vcpus = Number(m[2]);
  if (!flavor.vcpuOptions.includes(vcpus) || Number(m[3]) !== vcpus * flavor.ramMultiplier)
    return `"${id}" is not a size of CPU flavor ${flavor.id}; its instances are ${flavor.vcpuOptions.map((n) => cpuInstanceId(flavor, n)).join(', ')}`;
  return { id, flavorId: flavor.id, vcpuCount: vcpus, memoryGb: vcpus * flavor.ramMultiplier };
}

/**
 * The instance id of flavor `flavorId` at `vcpus` vCPUs (what REST v1's `cpuFlavorIds` + `vcpuCount`
 * and v2's `cpu` entries name); an unknown flavor keeps its name, for the settings to refuse.
 */
export function instanceIdOf(flavorId: string, vcpus: number, flavors: readonly CpuFlavor[]): string {
  const flavor = flavors.find((f) => f.id === flavorId);
  return flavor ? cpuInstanceId(flavor, vcpus) : `${flavorId}-${vcpus}-0`;
}

/** A stored (valid) instance id as REST v2's `cpu` entry: its flavor, vCPUs and GB of memory. */
export function cpuConfigOf(id: string): { id: string; vcpuCount: number; memory: number } {
  const m = INSTANCE_ID.exec(id);
  return { id: m?.[1] ?? id, vcpuCount: Number(m?.[2] ?? 0), memory: Number(m?.[3] ?? 0) };
}

/** The instances of valid ids, in the order given (invalid ones are the settings' violations). */
export const cpuInstancesOf = (ids: readonly string[], flavors: readonly CpuFlavor[]): CpuInstance[] =>
  ids.map((id) => parseCpuInstanceId(id, flavors)).filter((i): i is CpuInstance => typeof i !== 'string');

/** Whether workers may run in `dc`: `locations` names its country or its id, or names nothing (anywhere). */
export const inLocations = (locations: readonly string[], dc: Pick<DataCenter, 'id' | 'country'>): boolean =>
  locations.length === 0 || locations.includes(dc.country.toUpperCase()) || locations.includes(dc.id.toUpperCase());
