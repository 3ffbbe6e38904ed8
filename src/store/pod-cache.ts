import type { PodRecord } from './pod-record.js';

const deepFreeze = <T>(value: T): T => {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
};

/**
 * Pods by id, kept in memory where this process is the only writer (the store's capability
 * says so): GET /v2/pods/{id} is the hottest read and needs no database round trip. Every write
 * goes through PodStore and invalidates its entry; a read that raced a write does not repopulate
 * (the generation check), so the cache never serves a row older than the last write.
 */
export class PodCache {
  readonly #entries = new Map<string, PodRecord>();
  readonly #generation = new Map<string, number>();
  constructor(private readonly max: number) {}
  get(id: string): PodRecord | undefined {
    return this.#entries.get(id);
  }
  generation(id: string): number {
    return this.#generation.get(id) ?? 0;
  }
  fill(id: string, generation: number, record: PodRecord): void {
    if (this.generation(id) !== generation) return;
    if (this.#entries.size >= this.max) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(id, deepFreeze(record));
  }
  invalidate(id: string): void {
    this.#entries.delete(id);
    this.#generation.set(id, this.generation(id) + 1);
    if (this.#generation.size > this.max * 2) this.#generation.clear();
  }
}
