/**
 * A pod's creation, and a cluster's member pods': the request resolved against its template and
 * the catalog (pod-rules.ts), the tenant's env and image checked, the references checked, then,
 * under the account's quotas, placed and reserved, stored PROVISIONING and handed to the
 * controller, which starts it right after.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { AccountsService } from '../accounts/accounts-service.js';
import type { Catalog } from '../domain/catalog.js';
import type { Clock } from '../domain/clock.js';
import type { ClusterMember } from '../domain/cluster.js';
import { ApiError, badRequest } from '../domain/errors.js';
import { newSortableId } from '../domain/ids.js';
import { deadlineOf, type PodDeadline } from '../domain/pod-deadline.js';
import { assertEntrypointSupported, checkStartCommand, type EntrypointSupport } from '../domain/start-command.js';
import type { Inventory } from '../inventory/inventory.js';
import type { ResourceQuota } from '../quotas/resource-quota.js';
import type { RegistriesService } from '../registries/registries-service.js';
import { assertEnvAllowed } from '../runtime/env-allowed.js';
import { assertImageAllowed, type RegistryGuard } from '../runtime/registry-guard.js';
import type { Runtime } from '../runtime/runtime.js';
import type { PodDeadlineStore } from '../store/pod-deadline-store.js';
import type { PodRecord } from '../store/pod-record.js';
import type { TemplatesService } from '../templates/templates-service.js';
import type { VolumesService } from '../volumes/volumes-service.js';
import { assertRuntimeAvailable } from './pod-availability.js';
import type { PodController } from './pod-controller.js';
import { placeTogether } from './pod-group-placement.js';
import { Reclaims, type PodInterruptionsDeps, type SuspendedWorkerReclaimer } from './pod-interruptions.js';
import { newPodRecord, placementRequest } from './pod-record.js';
import { checkRegistry, volumeOf } from './pod-references.js';
import { injectedEnv, resolveCreate, type CreatePodInput, type PodSettings } from './pod-rules.js';
import { templateDefaults } from './pod-template.js';
import type { PodView } from './pod-view.js';
import type { PodViews } from './pod-views.js';

export interface PodCreationDeps {
  controller: Pick<PodController, 'store' | 'addresses' | 'instances' | 'kick' | 'interrupt'>;
  inventory: Pick<Inventory, 'availableHosts' | 'restore'>;
  runtime: Pick<Runtime, 'refusedEnv' | 'unavailable'>;
  templates: Pick<TemplatesService, 'resolveForPod'>;
  volumes: Pick<VolumesService, 'get'>;
  registries: Pick<RegistriesService, 'get'>;
  accounts: Pick<AccountsService, 'getSshKeys'>;
  clock: Clock;
  config: { catalog: Catalog };
  /** The pods and GPUs quotas; without it, none apply. */
  quota?: Pick<ResourceQuota, 'admit' | 'released'>;
  /** Where an interruption that failed is reported (pod-interruptions.ts). @default none */
  logger?: Pick<Logger, 'error'>;
  /** Refuses images from registries the engine may not pull from (runtime docker). @default none: every image passes */
  registryGuard?: Pick<RegistryGuard, 'refusal'> | null;
  /** Whether the runtime replaces an image's entrypoint (its module's capability), and its name for the refusal. */
  entrypoints: EntrypointSupport;
  /** Where a pod's own stop and termination times are kept. */
  deadlines: Pick<PodDeadlineStore, 'set'>;
  /** Removes suspended serverless workers the reclaim ladder took back (FlashBoot). @default none */
  suspendedWorkers?: SuspendedWorkerReclaimer | undefined;
}

/** A pod's start command within its bounds, and runnable on the runtime (domain/start-command.ts). */
export function assertStartCommand(entrypoints: EntrypointSupport, args: string): void {
  checkStartCommand(args);
  assertEntrypointSupported(entrypoints, args);
}

/** What a create asks of its placement besides the pod's settings. */
interface CreateExtras {
  deadline: PodDeadline | null;
  deployCost: number | undefined;
}

/** A `deployCost` as given: a non-negative number of USD per hour, or none. */
function deployCostOf(body: Pick<CreatePodInput, 'deployCost'>): number | undefined {
  const cost = body.deployCost;
  if (cost === undefined) return undefined;
  if (!Number.isFinite(cost) || cost < 0)
    throw badRequest(`deployCost ${cost} must be a price in USD per hour, 0 or more (e.g. 0.79).`);
  return cost;
}

/** The capacity refusal of a placement whose price is above the caller's `deployCost`. */
const aboveCeiling = (what: string, cost: number, ceiling: number): ApiError =>
  new ApiError(
    'NO_CAPACITY',
    `No placement fits deployCost $${ceiling}/hr: ${what} costs $${cost}/hr where it can be placed. Raise deployCost, or ask for fewer or cheaper GPUs or the other cloud.`,
  );

/** One member of a cluster to create: its pod name, rank/role/address and platform env. */
export interface ClusterMemberInput {
  name: string;
  cluster: ClusterMember;
  env: Record<string, string>;
}

const generatePassword = (): string => randomBytes(18).toString('base64url');

export class PodCreation {
  readonly #d: PodCreationDeps;
  readonly #views: Pick<PodViews, 'view'>;

  constructor(deps: PodCreationDeps, views: Pick<PodViews, 'view'>) {
    this.#d = deps;
    this.#views = views;
  }

  /** What stops the pods the reclaim ladder took back for a new one (pod-interruptions.ts). */
  get #interruptions(): PodInterruptionsDeps {
    const { controller, inventory, quota, logger, suspendedWorkers } = this.#d;
    return {
      controller,
      suspendedWorkers,
      instances: controller.instances,
      inventory,
      quota,
      onError: (err, holderId) => logger?.error({ err, holderId }, 'interrupting a pod for a new placement failed'),
    };
  }

  /** Validates, places and stores a pod (PROVISIONING); the controller starts it right after. */
  async create(accountId: string, body: CreatePodInput): Promise<PodView> {
    assertRuntimeAvailable(this.#d.runtime);
    const { catalog } = this.#d.config;
    const extras = { deadline: deadlineOf(body, this.#d.clock.now()), deployCost: deployCostOf(body) };
    const template = body.templateId
      ? templateDefaults(await this.#d.templates.resolveForPod(accountId, body.templateId))
      : null;
    const settings = resolveCreate(body, template, catalog);
    assertStartCommand(this.#d.entrypoints, settings.args);
    assertEnvAllowed(this.#d.runtime, settings.env, settings.image);
    await assertImageAllowed(this.#d.registryGuard, settings.image);
    if (settings.registry !== null) await checkRegistry(this.#d.registries, accountId, settings.registry);
    const volumeDataCenterId = settings.mounts.network?.length
      ? (await volumeOf(this.#d.volumes, accountId, settings.mounts.network[0]!.volumeId)).dataCenterId
      : null;
    const sshKeys = settings.startSsh ? await this.#d.accounts.getSshKeys(accountId) : [];
    const hiddenEnv = injectedEnv(settings, sshKeys, generatePassword);

    const gpus = settings.compute.kind === 'gpu' ? settings.compute.count : 0;
    const quota = this.#d.quota;
    return quota
      ? quota.admit(accountId, { pods: 1, gpus }, () =>
          this.#place(accountId, settings, volumeDataCenterId, hiddenEnv, extras),
        )
      : this.#place(accountId, settings, volumeDataCenterId, hiddenEnv, extras);
  }

  /** Places, reserves and stores the pod (the step the quotas guard). */
  async #place(
    accountId: string,
    settings: PodSettings,
    volumeDataCenterId: string | null,
    hiddenEnv: Record<string, string>,
    extras: CreateExtras,
  ): Promise<PodView> {
    const id = newSortableId();
    const request = placementRequest(settings, volumeDataCenterId, accountId);
    const globalIp = settings.globalNetworking ? await this.#d.controller.addresses.allocate() : null;
    if (settings.globalNetworking && globalIp === null)
      throw new ApiError('NO_CAPACITY', 'No global networking address is free: the configured pool is exhausted.');
    const placed = this.#d.controller.instances.place(id, request);
    if (!placed.ok) {
      this.#d.controller.addresses.release(globalIp);
      throw new ApiError('NO_CAPACITY', placed.reason);
    }
    const reclaims = new Reclaims();
    reclaims.add(placed.reclaimed, request.reclaim);
    const pod = newPodRecord({
      id,
      accountId,
      settings,
      placement: placed.placement,
      volumeDataCenterId,
      hiddenEnv,
      globalIp,
      cluster: null,
      now: this.#d.clock.now(),
      catalog: this.#d.config.catalog,
    });
    try {
      if (extras.deployCost !== undefined && pod.costPerHr > extras.deployCost)
        throw aboveCeiling('the pod', pod.costPerHr, extras.deployCost);
      // The time first: a pod never runs without the stop it was created with (a time left
      // without its pod is forgotten by the sweep).
      if (extras.deadline) await this.#d.deadlines.set(id, extras.deadline);
      await this.#d.controller.store.insert(pod);
    } catch (err) {
      this.#d.controller.instances.release(id);
      reclaims.giveBack(this.#interruptions);
      this.#d.controller.addresses.release(globalIp);
      throw err;
    }
    reclaims.interrupt(this.#interruptions, [id]);
    this.#d.controller.kick(id, pod);
    return this.#views.view(pod, { live: null, justCreated: true });
  }

  /**
   * Creates a cluster's member pods (docs/clusters.md): one shape from `body`, all placed in one
   * data center or none — every member is reserved before any is stored, and a member that does
   * not fit releases those reserved before it (400 NO_CAPACITY). They are stored in one
   * transaction. `members[i].env` is platform env (rank, addresses) layered over the tenant's.
   */
  async createGroup(
    accountId: string,
    body: CreatePodInput,
    group: { clusterId: string; members: ReadonlyArray<ClusterMemberInput> },
  ): Promise<PodRecord[]> {
    assertRuntimeAvailable(this.#d.runtime);
    const { catalog } = this.#d.config;
    const deployCost = deployCostOf(body);
    const template = body.templateId
      ? templateDefaults(await this.#d.templates.resolveForPod(accountId, body.templateId))
      : null;
    const settings = resolveCreate(body, template, catalog);
    assertStartCommand(this.#d.entrypoints, settings.args);
    assertEnvAllowed(this.#d.runtime, settings.env, settings.image);
    await assertImageAllowed(this.#d.registryGuard, settings.image);
    if (settings.registry !== null) await checkRegistry(this.#d.registries, accountId, settings.registry);
    const volumeDataCenterId = settings.mounts.network?.length
      ? (await volumeOf(this.#d.volumes, accountId, settings.mounts.network[0]!.volumeId)).dataCenterId
      : null;
    const sshKeys = settings.startSsh ? await this.#d.accounts.getSshKeys(accountId) : [];
    const n = group.members.length;
    const gpus = settings.compute.kind === 'gpu' ? settings.compute.count * n : 0;
    const place = async (): Promise<PodRecord[]> => {
      const ids = group.members.map(() => newSortableId());
      const reclaims = new Reclaims();
      const placements = placeTogether(
        this.#d.controller.instances,
        this.#d.inventory,
        ids,
        placementRequest(settings, volumeDataCenterId, accountId),
        reclaims,
      );
      const pods = group.members.map((m, i) =>
        newPodRecord({
          id: ids[i]!,
          accountId,
          settings: { ...settings, name: m.name },
          placement: placements[i]!,
          volumeDataCenterId,
          hiddenEnv: { ...injectedEnv(settings, sshKeys, generatePassword), ...m.env },
          globalIp: null,
          cluster: { id: group.clusterId, member: m.cluster },
          now: this.#d.clock.now(),
          catalog: this.#d.config.catalog,
        }),
      );
      try {
        const cost = pods.reduce((sum, pod) => sum + pod.costPerHr, 0);
        if (deployCost !== undefined && cost > deployCost)
          throw aboveCeiling(`the cluster's ${n} pods`, Math.round(cost * 1e6) / 1e6, deployCost);
        await this.#d.controller.store.withTransaction(async (tx) => {
          for (const pod of pods) await this.#d.controller.store.insert(pod, tx);
        });
      } catch (err) {
        for (const id of ids) this.#d.controller.instances.release(id);
        reclaims.giveBack(this.#interruptions);
        throw err;
      }
      reclaims.interrupt(this.#interruptions, ids);
      for (const pod of pods) this.#d.controller.kick(pod.id, pod);
      return pods;
    };
    const quota = this.#d.quota;
    return quota ? quota.admit(accountId, { pods: n, gpus }, place) : place();
  }
}
