/**
 * The one path pods and serverless workers take to their hosts. An instance is placed and its
 * resources reserved on the inventory (or reserved again exactly, for a stopped pod starting or an
 * instance adopted after a restart), started through the runtime from one `InstanceSpec`
 * (./instance-spec.ts), adopted as the runtime's `attach()` found it (./attached-instances.ts),
 * and reaped: its instance removed and its reservation released.
 *
 * What each kind records about its instances (a pod's row and usage intervals; a worker's row,
 * key and jobs) stays with its service, which calls these steps in order: nothing here calls back.
 */
import type { PlacementRequest, PlacementResult } from '../domain/placement-request.js';
import type { Allocation, Inventory } from '../inventory/inventory.js';
import type { SystemLogWriter } from '../logs/system-log.js';
import type { RegistriesService } from '../registries/registries-service.js';
import type { InstanceSpec, InstanceStatus, Runtime } from '../runtime/runtime.js';

export interface InstancesDeps {
  runtime: Pick<Runtime, 'start' | 'remove' | 'unavailable' | 'runsAsPlaceholder'>;
  inventory: Pick<Inventory, 'placeAndReserve' | 'reserveExact' | 'release'>;
  /** Credentials of private registries, handed to the runtime to pull an image. @default none: no credentials */
  registries?: Pick<RegistriesService, 'credentials'> | undefined;
  /** The instances' `system` log lines (docs/logs.md). @default none written */
  systemLog?: SystemLogWriter | undefined;
}

/** An instance launched: what the runtime reports, and whether its image runs as an idle placeholder. */
export interface Launched {
  status: InstanceStatus;
  placeholder: boolean;
}

/** A launch that waits: the instances taken back for it still hold its host's GPUs (the reason says which). */
export class NotCleared extends Error {}

export class Instances {
  readonly #deps: InstancesDeps;
  /** Per new instance: what must be gone from its host before it starts (holds placement took back for it). */
  readonly #clearing = new Map<string, { cleared: () => Promise<void>; told: boolean }>();

  constructor(deps: InstancesDeps) {
    this.#deps = deps;
  }

  /** Chooses a host for a new instance and reserves what it gets there for `id`; else why none can take it. */
  place(id: string, request: PlacementRequest): PlacementResult {
    return this.#deps.inventory.placeAndReserve(id, request);
  }

  /** Reserves exactly what an instance holds (it starts again on its host, or was adopted); the reason says what is taken. */
  reserve(id: string, allocation: Allocation): { ok: true } | { ok: false; reason: string } {
    return this.#deps.inventory.reserveExact(id, allocation);
  }

  /** Gives back whatever `id` holds on its host; a no-op when it holds nothing. */
  release(id: string): void {
    this.#clearing.delete(id);
    this.#deps.inventory.release(id);
  }

  /**
   * `id`'s launch waits for `cleared` first: the instances placement took back to make room for it
   * still hold their GPUs and ports on the host until they are stopped (docs/pods.md). While
   * `cleared` rejects, a launch rejects with {@link NotCleared}, and the next launch calls it again.
   */
  startAfter(id: string, cleared: () => Promise<void>): void {
    this.#clearing.set(id, { cleared, told: false });
  }

  /** The credentials of the account's registry `registryId` (null or empty: none, a public image). */
  async registryAuth(
    accountId: string,
    registryId: string | null,
  ): Promise<{ username: string; password: string } | null> {
    if (!registryId || !this.#deps.registries) return null;
    return this.#deps.registries.credentials(accountId, registryId);
  }

  /**
   * Starts the instance on the host it was placed on, saying so in its `system` log. Rejects when
   * it cannot launch (the reason in the message; `away` tells whether its runtime or host was).
   */
  async launch(spec: InstanceSpec, dataCenterId: string | null): Promise<Launched> {
    const clearing = this.#clearing.get(spec.id);
    if (clearing) {
      if (!clearing.told) await this.log(spec.id, 'waiting for the interrupted instances on its host to stop');
      clearing.told = true;
      await clearing.cleared().catch((err: unknown) => {
        throw new NotCleared((err as Error).message, { cause: err });
      });
      this.#clearing.delete(spec.id);
    }
    await this.log(
      spec.id,
      `placed on host ${spec.hostId || '?'} (${dataCenterId ?? 'no data center'}); pulling (if needed) and starting image ${spec.image}`,
    );
    const status = await this.#deps.runtime.start(spec);
    return { status, placeholder: this.#deps.runtime.runsAsPlaceholder?.(spec.image) ?? false };
  }

  /**
   * Why nothing can be started on `hostId` right now (its runtime's engine, or in a fleet the host
   * itself, is away), or null. Without a host: the runtime as a whole.
   */
  away(hostId?: string): string | null {
    return this.#deps.runtime.unavailable?.(hostId) ?? null;
  }

  /**
   * Removes the instance and everything it had, then releases its reservation. A removal that
   * fails (its engine is away) answers why rather than throwing: the reservation goes either way,
   * and what is left is an orphan for the next start's collector.
   */
  async reap(id: string): Promise<string | null> {
    try {
      await this.#deps.runtime.remove(id);
      return null;
    } catch (err) {
      return (err as Error).message;
    } finally {
      this.#deps.inventory.release(id);
    }
  }

  /** A `system` line of the instance's log (never throws). */
  async log(id: string, line: string): Promise<void> {
    await this.#deps.systemLog?.write(id, line);
  }
}
