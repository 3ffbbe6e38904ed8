/**
 * Which of the instances a host reports it may claim (docs/fleet.md, `/agent/v1/report`): only
 * those the control plane placed on that very host. Another host's pod, an id never placed, or
 * something that is no instance id is refused with the reason (answered to the agent), and nothing
 * of it is applied. Another host's instance and an id never placed get one and the same reason: a
 * host (perhaps a compromised one) learns nothing of what runs elsewhere from its answers. Ids the runtime already tracks answer from memory;
 * only the others are looked up in the control plane's records, in one call per report.
 */
import type { InstanceOwner, InstanceState } from '../runtime/runtime.js';
import type { InstanceReport, ReportAnswer } from './protocol.js';

export type Refusal = ReportAnswer['refused'][number];

/** Where the control plane placed an instance, and whose it is, as its records say. */
export interface PlacedInstance {
  hostId: string;
  owner: InstanceOwner;
}

export interface Screened {
  refused: Refusal[];
  /** ids the host may claim */
  accepted: Set<string>;
  /** the records of the accepted ids that were looked up */
  placed: ReadonlyMap<string, PlacedInstance>;
}

const MAX_ID = 200;
/**
 * Why an id is refused when no record places it on the reporting host, whether a record places it
 * on another host or none places it anywhere (orphan-containers.ts removes those after a grace).
 */
const NOT_PLACED_HERE = 'the control plane placed no instance with this id on this host';
export const isNotPlacedHere = (r: Refusal): boolean => r.reason === NOT_PLACED_HERE;
const STATES: ReadonlySet<InstanceState> = new Set(['starting', 'running', 'suspended', 'exited', 'failed', 'unknown']);

/**
 * Screens `items` reported by `hostId`: `known(id)` answers the host of an instance the runtime
 * tracks, `placed(ids)` looks the others up.
 */
export async function screenReport(
  hostId: string,
  items: ReadonlyArray<Pick<InstanceReport, 'id'> & Partial<Pick<InstanceReport, 'state'>>>,
  known: (id: string) => string | undefined,
  placed: (ids: readonly string[]) => Promise<ReadonlyMap<string, PlacedInstance>>,
): Promise<Screened> {
  const refused: Refusal[] = [];
  const accepted = new Set<string>();
  const unknown: string[] = [];
  // An id reported twice in one report is refused whole when either has no valid state.
  const badState = new Map<string, string>();
  for (const { id, state } of items)
    if (state !== undefined && !STATES.has(state) && !badState.has(id)) badState.set(id, String(state));
  const decided = new Set<string>();
  for (const { id } of items) {
    if (decided.has(id)) continue;
    decided.add(id);
    if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID) {
      refused.push({ id: String(id).slice(0, MAX_ID), reason: 'not an instance id' });
      continue;
    }
    const state = badState.get(id);
    if (state !== undefined) {
      refused.push({ id, reason: `state "${state.slice(0, 20)}" is none of ${[...STATES].join(', ')}` });
      continue;
    }
    const host = known(id);
    if (host === undefined) unknown.push(id);
    else if (host !== hostId) refused.push({ id, reason: NOT_PLACED_HERE });
    else accepted.add(id);
  }
  if (unknown.length === 0) return { refused, accepted, placed: new Map() };
  const records = await placed(unknown);
  for (const id of unknown) {
    const p = records.get(id);
    if (!p || p.hostId !== hostId) refused.push({ id, reason: NOT_PLACED_HERE });
    else accepted.add(id);
  }
  return { refused, accepted, placed: records };
}
