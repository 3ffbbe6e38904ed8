import { ALIVE_STATES, type AttachedInstance, type InstanceOwner, type InstanceStatus } from '../runtime/runtime.js';

/** An instance that runs, is suspended, or may run (its engine cannot see it right now): adopted, not restarted. */
export const isLiveInstance = (s: InstanceStatus): boolean => ALIVE_STATES.has(s.state);

/**
 * What the runtime's `attach()` found at server start, by id, for pods and workers to claim: an
 * instance of theirs that still runs is adopted (its allocation reserved again) rather than
 * started a second time. What nobody claims is the orphan collector's.
 */
export class AttachedInstances {
  readonly #byId: ReadonlyMap<string, AttachedInstance>;

  constructor(attached: readonly AttachedInstance[]) {
    this.#byId = new Map(attached.map((a) => [a.id, a]));
  }

  /** Whether the runtime found an instance of that id (running or kept stopped). */
  has(id: string): boolean {
    return this.#byId.has(id);
  }

  /**
   * The live instance of `id`, when the runtime found one labelled for `owner` (the kind, and a
   * worker's endpoint) or unlabelled; else why it cannot be adopted.
   */
  claim(
    id: string,
    owner: Pick<InstanceOwner, 'kind' | 'endpointId'>,
  ): { ok: true; status: InstanceStatus } | { ok: false; reason: string } {
    const found = this.#byId.get(id);
    if (!found) return { ok: false, reason: 'the runtime found no instance of it' };
    if (
      found.owner &&
      (found.owner.kind !== owner.kind ||
        (owner.endpointId !== undefined &&
          found.owner.endpointId !== undefined &&
          found.owner.endpointId !== owner.endpointId))
    )
      return { ok: false, reason: 'its instance belongs to something else' };
    if (!found.status || !isLiveInstance(found.status)) return { ok: false, reason: 'its instance no longer runs' };
    return { ok: true, status: found.status };
  }
}
