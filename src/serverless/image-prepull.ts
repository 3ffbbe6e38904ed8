/**
 * Images ready before the first job (FlashBoot, docs/serverless.md "Pre-pulled images"): every
 * FlashBoot endpoint's image is pulled ahead of time on each host its workers may run on (the
 * placement's static filters: GPU type or CPU flavor, data centers, CUDA), so a fresh start never
 * waits for a pull.
 *
 * One pass (every `intervalMs`, on the replica holding the autoscaler's lease):
 * - what each host should hold: the images of the FlashBoot endpoints, per account, oldest endpoint first; a
 *   private image is pulled with its owner's registry credential, under the rules a start's pull
 *   follows (the runtime's `prepareImage`: a repository pulled with a credential is private there);
 * - per host, what it pre-pulled and no FlashBoot endpoint wants any more is removed (an image a
 *   container still uses is kept until a later pass); images the host held before are never
 *   pulled nor removed;
 * - per host, a disk budget (`diskBudgetGb`) bounds what pre-pulled images take together, shared
 *   max-min fairly between the accounts that want images there (domain/prepull-plan.ts): images
 *   over their account's share are removed to make room for another account's (never one a
 *   container uses), an image learnt larger than its account's share is removed and not pulled
 *   again while the shares stay. Sizes are learnt from pulls (and the host's records) and kept;
 * - a pull that fails (the registry refuses it, a wrong credential, not found) waits out a back-off
 *   per host and image (prepull-backoff.ts; `clock`), ended by a change of its owner's credential;
 *   meanwhile it holds no share.
 * A runtime without the capability (the process runtime: nothing to pull) does nothing. Hosts are
 * settled side by side (a fleet host's pull is its agent's, and may take minutes); a host the
 * runtime cannot reach now or cannot pre-pull on (a fleet host whose agent predates it:
 * `canPrepareImages`) is left out, and a host whose settling fails does not stop the others.
 */
import type { Logger } from 'pino';
import type { Catalog } from '../domain/catalog.js';
import type { Clock } from '../domain/clock.js';
import { eligibleHostIds } from '../domain/placement.js';
import { planPrepull, type PrepullWant } from '../domain/prepull-plan.js';
import type { Inventory } from '../inventory/inventory.js';
import type { RegistriesService } from '../registries/registries-service.js';
import type { Runtime } from '../runtime/runtime.js';
import type { AutoscalerStore } from '../store/autoscaler-store.js';
import type { Lease } from '../store/leases.js';
import type { EndpointsService } from './endpoints-service.js';
import { credentialFingerprint, PrepullBackoff } from './prepull-backoff.js';
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
  /** When a failed pull may be tried again. */
  clock: Clock;
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

/** Per account (the one whose oldest endpoint is oldest first), its images in its endpoints' order. */
type HostWants = Map<string, Map<string, Wanted>>;

const GB = 1_000_000_000;

export class ImagePrepull {
  readonly #d: ImagePrepullDeps;
  /** What each image takes, learnt from its pulls and the hosts' records. */
  readonly #sizes = new Map<string, number>();
  /** `host\0image` the host held before (not Gantry's: nothing of the budget). */
  readonly #foreign = new Set<string>();
  readonly #backoff = new PrepullBackoff();
  /** A host whose listing failed, with why (logged once per reason). */
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
        this.#settle(h.id, wanted.get(h.id) ?? new Map<string, Map<string, Wanted>>()).catch((err: unknown) => {
          const reason = (err as Error).message;
          if (this.#failed.get(h.id) !== reason)
            this.#d.logger.warn({ hostId: h.id, err: reason }, 'cannot settle the pre-pulled images of a host');
          this.#failed.set(h.id, reason);
        }),
      ),
    );
  }

  /** Per host, the images it should hold, per account. */
  async #wanted(snapshot: ReturnType<Inventory['snapshot']>): Promise<Map<string, HostWants>> {
    const { store, endpoints, registries, catalog, logger } = this.#d;
    const found: Array<{ createdAt: number; want: Wanted; hostIds: string[] }> = [];
    for (const { id, accountId } of await store.flashbootEndpoints()) {
      try {
        const endpoint = await endpoints.get(accountId, id);
        const template = await endpoints.templateOf(endpoint);
        if (!template) continue;
        const registryId = template.containerRegistryAuthId;
        const registryAuth = registryId ? await registries.credentials(accountId, registryId) : null;
        const want: Wanted = { image: template.imageName, accountId, registryAuth, endpointId: id };
        const hostIds = workerPlacementRequests(endpoint, template, null, catalog).flatMap((request) =>
          eligibleHostIds(request, snapshot),
        );
        found.push({ createdAt: endpoint.createdAt, want, hostIds });
      } catch (err) {
        logger.warn({ endpointId: id, err: (err as Error).message }, 'cannot tell which image to pre-pull');
      }
    }
    found.sort((a, b) => a.createdAt - b.createdAt || a.want.endpointId.localeCompare(b.want.endpointId));
    const out = new Map<string, HostWants>();
    for (const { want, hostIds } of found)
      for (const hostId of hostIds) {
        let accounts = out.get(hostId);
        if (!accounts) out.set(hostId, (accounts = new Map<string, Map<string, Wanted>>()));
        let images = accounts.get(want.accountId);
        if (!images) accounts.set(want.accountId, (images = new Map<string, Wanted>()));
        if (!images.has(want.image)) images.set(want.image, want);
      }
    return out;
  }

  /**
   * Brings one host to the plan, one pull at a time: the plan is made again after each pull (its
   * size is then known) and after a removal a container refused. Images no account wants are
   * removed at once; images over their account's share only as a pull needs their room.
   */
  async #settle(hostId: string, accounts: HostWants): Promise<void> {
    const { runtime, logger, config, clock } = this.#d;
    const budget = config.diskBudgetGb * GB;
    const now = clock.now();
    // A failing image waits out its back-off: meanwhile it is not pulled and holds no share.
    const ready = (w: Wanted) =>
      this.#backoff.waitingUntil(hostId, w.image, credentialFingerprint(w.registryAuth), now) === null;
    const wanted: PrepullWant[] = [...accounts].map(([accountId, images]) => ({
      accountId,
      images: [...images.values()].filter(ready).map((w) => w.image),
    }));
    const inUse = new Set<string>();
    const tried = new Set<string>();
    for (;;) {
      const held = await runtime.preparedImages!(hostId);
      this.#failed.delete(hostId);
      for (const p of held) this.#sizes.set(p.image, p.sizeBytes);
      const have = new Set(held.map((p) => p.image));
      const sizes = new Map(this.#sizes);
      for (const w of wanted)
        for (const image of w.images) if (this.#foreign.has(`${hostId}\0${image}`)) sizes.set(image, 0);
      const plan = planPrepull({
        budgetBytes: budget,
        held: held.map((p) => ({ ...p, inUse: inUse.has(p.image) })),
        // Tried in this pass and not held: failed, or found too large and removed.
        wanted: wanted.map((w) => ({ ...w, images: w.images.filter((i) => have.has(i) || !tried.has(i)) })),
        sizes,
      });
      const next = plan.pull[0];
      let total = held.reduce((sum, p) => sum + p.sizeBytes, 0);
      let refused = false;
      for (const r of plan.remove) {
        if (r.reason === 'over-share' && total + (next?.roomBytes ?? 0) <= budget) break;
        const outcome = await runtime.discardImage!(hostId, r.image);
        if (outcome === 'in-use') {
          inUse.add(r.image);
          refused = true;
          continue;
        }
        total -= r.sizeBytes;
        logger.info(
          { hostId, image: r.image, accountId: r.accountId, outcome },
          r.reason === 'unwanted'
            ? 'removed a pre-pulled image no FlashBoot endpoint uses'
            : 'removed a pre-pulled image over its account’s share of the host’s pre-pull disk budget',
        );
      }
      if (refused) continue; // in use: planned again with it kept
      if (!next) return;
      tried.add(next.image);
      const want = accounts.get(next.accountId)!.get(next.image)!;
      if (total + next.roomBytes > budget) {
        logger.warn(
          { hostId, image: want.image, endpointId: want.endpointId, budgetGb: config.diskBudgetGb },
          'not pre-pulled: the host’s pre-pull disk budget is spent',
        );
        continue;
      }
      await this.#pull(hostId, want);
    }
  }

  async #pull(hostId: string, want: Wanted): Promise<void> {
    const { runtime, logger, clock } = this.#d;
    const key = `${hostId}\0${want.image}`;
    try {
      const { pulled, sizeBytes } = await runtime.prepareImage!(hostId, want);
      this.#backoff.succeeded(hostId, want.image);
      if (!pulled) {
        this.#foreign.add(key);
        return;
      }
      this.#foreign.delete(key);
      this.#sizes.set(want.image, sizeBytes);
      logger.info({ hostId, image: want.image, endpointId: want.endpointId, sizeBytes }, 'pre-pulled image');
    } catch (err) {
      const retryInMs = this.#backoff.failed(hostId, want.image, credentialFingerprint(want.registryAuth), clock.now());
      logger.warn(
        { hostId, image: want.image, endpointId: want.endpointId, err: (err as Error).message, retryInMs },
        'pre-pull failed',
      );
    }
  }
}
