/**
 * Images ready before the first job (FlashBoot, docs/serverless.md "Pre-pulled images"): every
 * FlashBoot endpoint's image is pulled ahead of time on each host its workers may run on (the
 * placement's static filters: GPU type or CPU flavor, data centers, CUDA), so a fresh start never
 * waits for a pull.
 *
 * One pass (every `intervalMs`, on the replica holding the autoscaler's lease):
 * - what each host should hold: the images of the FlashBoot endpoints, oldest endpoint first; a
 *   private image is pulled with its owner's registry credential, under the rules a start's pull
 *   follows (the runtime's `prepareImage`: a repository pulled with a credential is private there);
 * - per host, what it pre-pulled and no FlashBoot endpoint wants any more is removed (an image a
 *   container still uses is kept until a later pass); images the host held before are never
 *   pulled nor removed;
 * - per host, a disk budget (`diskBudgetGb`) bounds what pre-pulled images take together: the
 *   endpoints past it are not pre-pulled (said once in the log); an image that turns out larger
 *   than what was left is removed again and not tried while the budget stays.
 * A runtime without the capability (the process runtime: nothing to pull) does nothing. Hosts are
 * settled side by side (a fleet host's pull is its agent's, and may take minutes); a host the
 * runtime cannot reach now or cannot pre-pull on (a fleet host whose agent predates it:
 * `canPrepareImages`) is left out, and a host whose settling fails does not stop the others.
 */
import type { Logger } from 'pino';
import type { Catalog } from '../domain/catalog.js';
import { eligibleHostIds } from '../domain/placement.js';
import type { Inventory } from '../inventory/inventory.js';
import type { RegistriesService } from '../registries/registries-service.js';
import type { Runtime } from '../runtime/runtime.js';
import type { AutoscalerStore } from '../store/autoscaler-store.js';
import type { Lease } from '../store/leases.js';
import type { EndpointsService } from './endpoints-service.js';
import { workerPlacementRequests } from './worker-spec.js';

export interface ImagePrepullConfig {
  /** How often a pass runs; 0 turns pre-pulling off. */
  intervalMs: number;
  /** What pre-pulled images may take together on one host, GB. */
  diskBudgetGb: number;
}

export interface ImagePrepullDeps {
  runtime: Pick<Runtime, 'prepareImage' | 'preparedImages' | 'discardImage' | 'canPrepareImages' | 'unavailable'>;
  inventory: Pick<Inventory, 'snapshot'>;
  store: Pick<AutoscalerStore, 'flashbootEndpoints'>;
  endpoints: Pick<EndpointsService, 'get' | 'templateOf'>;
  /** The owners' registry credentials (private images). */
  registries: Pick<RegistriesService, 'credentials'>;
  catalog: Catalog;
  lease: Pick<Lease, 'isHeld'>;
  logger: Pick<Logger, 'info' | 'warn'>;
  config: ImagePrepullConfig;
}

/** An image one host should hold, for whom. */
interface Wanted {
  image: string;
  accountId: string;
  registryAuth: { username: string; password: string } | null;
  endpointId: string;
}

const GB = 1_000_000_000;

export class ImagePrepull {
  readonly #d: ImagePrepullDeps;
  /** `host\0image` found too large for what the budget left: not tried again. */
  readonly #tooLarge = new Set<string>();
  /** `host\0image` whose pull failed, or a host whose listing failed, with why (logged once per reason). */
  readonly #failed = new Map<string, string>();
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #stopped = false;

  constructor(deps: ImagePrepullDeps) {
    this.#d = deps;
  }

  start(): void {
    if (this.#d.config.intervalMs <= 0 || !this.#d.runtime.prepareImage) return;
    const tick = () => {
      this.#running = this.pass()
        .catch((err: unknown) => this.#d.logger.warn({ err: (err as Error).message }, 'image pre-pull pass failed'))
        .finally(() => {
          this.#running = null;
          if (!this.#stopped) this.#timer = setTimeout(tick, this.#d.config.intervalMs).unref();
        });
    };
    this.#timer = setTimeout(tick, 0).unref();
  }

  /** Ends the loop; waits at most a second for a pass under way (a pull may take minutes: it goes on in the engine). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (!this.#running) return;
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([this.#running, new Promise<void>((r) => (bound = setTimeout(r, 1_000).unref()))]);
    clearTimeout(bound);
  }

  /** One pass (exported for tests, which run it on their own schedule). */
  async pass(): Promise<void> {
    const { runtime, lease } = this.#d;
    if (!runtime.prepareImage || !runtime.preparedImages || !runtime.discardImage || !lease.isHeld()) return;
    const snapshot = this.#d.inventory.snapshot();
    const wanted = await this.#wanted(snapshot);
    const hosts = snapshot.hosts.filter(
      (h) => (runtime.canPrepareImages?.(h.id) ?? true) && !runtime.unavailable?.(h.id),
    );
    await Promise.all(
      hosts.map((h) =>
        this.#settle(h.id, wanted.get(h.id) ?? new Map<string, Wanted>()).catch((err: unknown) => {
          const reason = (err as Error).message;
          if (this.#failed.get(h.id) !== reason)
            this.#d.logger.warn({ hostId: h.id, err: reason }, 'cannot settle the pre-pulled images of a host');
          this.#failed.set(h.id, reason);
        }),
      ),
    );
  }

  /** Per host, the images it should hold (image → the oldest endpoint's want). */
  async #wanted(snapshot: ReturnType<Inventory['snapshot']>): Promise<Map<string, Map<string, Wanted>>> {
    const { store, endpoints, registries, catalog, logger } = this.#d;
    const out = new Map<string, Map<string, Wanted>>();
    for (const { id, accountId } of await store.flashbootEndpoints()) {
      try {
        const endpoint = await endpoints.get(accountId, id);
        const template = await endpoints.templateOf(endpoint);
        if (!template) continue;
        const registryId = template.containerRegistryAuthId;
        const registryAuth = registryId ? await registries.credentials(accountId, registryId) : null;
        const want: Wanted = { image: template.imageName, accountId, registryAuth, endpointId: id };
        for (const request of workerPlacementRequests(endpoint, template, null, catalog))
          for (const hostId of eligibleHostIds(request, snapshot)) {
            let images = out.get(hostId);
            if (!images) out.set(hostId, (images = new Map<string, Wanted>()));
            if (!images.has(want.image)) images.set(want.image, want);
          }
      } catch (err) {
        logger.warn({ endpointId: id, err: (err as Error).message }, 'cannot tell which image to pre-pull');
      }
    }
    return out;
  }

  async #settle(hostId: string, wanted: Map<string, Wanted>): Promise<void> {
    const { runtime, logger, config } = this.#d;
    const held = await runtime.preparedImages!(hostId);
    this.#failed.delete(hostId);
    let used = 0;
    for (const p of held) {
      if (wanted.has(p.image)) {
        used += p.sizeBytes;
        continue;
      }
      const outcome = await runtime.discardImage!(hostId, p.image);
      if (outcome === 'in-use') continue;
      logger.info({ hostId, image: p.image, outcome }, 'removed a pre-pulled image no FlashBoot endpoint uses');
      // Room freed: what did not fit before is tried again.
      for (const key of this.#tooLarge) if (key.startsWith(`${hostId}\0`)) this.#tooLarge.delete(key);
    }
    const budget = config.diskBudgetGb * GB;
    const have = new Set(held.map((p) => p.image));
    for (const want of wanted.values()) {
      const key = `${hostId}\0${want.image}`;
      if (have.has(want.image) || this.#tooLarge.has(key)) continue;
      if (used >= budget) {
        logger.warn(
          { hostId, image: want.image, endpointId: want.endpointId, budgetGb: config.diskBudgetGb },
          'not pre-pulled: the host’s pre-pull disk budget is spent',
        );
        break;
      }
      try {
        const { pulled, sizeBytes } = await runtime.prepareImage!(hostId, want);
        this.#failed.delete(key);
        if (!pulled) continue;
        if (used + sizeBytes > budget) {
          await runtime.discardImage!(hostId, want.image);
          this.#tooLarge.add(key);
          logger.warn(
            { hostId, image: want.image, sizeBytes, budgetGb: config.diskBudgetGb },
            'removed a pre-pulled image again: it does not fit what is left of the host’s pre-pull disk budget',
          );
          continue;
        }
        used += sizeBytes;
        logger.info({ hostId, image: want.image, endpointId: want.endpointId, sizeBytes }, 'pre-pulled image');
      } catch (err) {
        const reason = (err as Error).message;
        if (this.#failed.get(key) !== reason)
          logger.warn({ hostId, image: want.image, endpointId: want.endpointId, err: reason }, 'pre-pull failed');
        this.#failed.set(key, reason);
      }
    }
  }
}
