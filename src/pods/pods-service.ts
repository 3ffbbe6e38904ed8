/**
 * The pod use-cases: create, read, list, change, act. Rules live in pod-rules.ts, the lifecycle in
 * pod-controller.ts, creation in pod-creation.ts; this service checks ownership and references,
 * and renders the pods.
 */
import type { PodHttpUrl } from './pod-view.js';
import type { Logger } from 'pino';
import type { AccountsService } from '../accounts/accounts-service.js';
import type { Catalog } from '../domain/catalog.js';
import type { EntrypointSupport } from '../domain/start-command.js';
import type { Clock } from '../domain/clock.js';
import { accruedUsage, bidCostPerHour } from '../domain/cost.js';
import { ApiError, notFound } from '../domain/errors.js';
import type { PodAction } from '../domain/pod-state.js';
import type { Inventory } from '../inventory/inventory.js';
import type { RegistriesService } from '../registries/registries-service.js';
import { assertEnvAllowed } from '../runtime/env-allowed.js';
import { assertImageAllowed, type RegistryGuard } from '../runtime/registry-guard.js';
import type { Runtime } from '../runtime/runtime.js';
import type { PodDeadlineStore } from '../store/pod-deadline-store.js';
import type { PodChanges, PodListFilter, PodRecord } from '../store/pod-record.js';

/** What the SSH proxy needs of the pod a session names. */
export type SshPod = Pick<PodRecord, 'id' | 'accountId' | 'status' | 'startSsh'>;
import type { TemplatesService } from '../templates/templates-service.js';
import type { VolumesService } from '../volumes/volumes-service.js';
import type { ResourceQuota } from '../quotas/resource-quota.js';
import { diskOf } from './pod-allocation.js';
import { assertHostReachable, assertRuntimeAvailable } from './pod-availability.js';
import type { SuspendedWorkerReclaimer } from './pod-interruptions.js';
import type { PodController } from './pod-controller.js';
import { assertStartCommand, PodCreation, type ClusterMemberInput } from './pod-creation.js';
import { resolveBid } from './pod-bid.js';
import { checkRegistry } from './pod-references.js';
import {
  RESTARTING_FIELDS,
  applyMountPatch,
  checkPorts,
  type CreatePodInput,
  type PatchPodInput,
} from './pod-rules.js';
import { effectivePatch, templateDefaults } from './pod-template.js';
import type { PodView, SshProxyAddress } from './pod-view.js';
import { PodViews } from './pod-views.js';
import { podPage, type PodPage, type PodPageQuery } from './pod-listing.js';

export interface PodsServiceDeps {
  controller: PodController;
  inventory: Inventory;
  /**
   * `refusedEnv`: the env a tenant may set (the process runtime refuses loader and interpreter
   * variables); `unavailable`: why no instance can start now (creates and starts are refused).
   */
  runtime: Pick<Runtime, 'inspect' | 'refusedEnv' | 'unavailable'>;
  templates: Pick<TemplatesService, 'resolveForPod'>;
  volumes: Pick<VolumesService, 'get'>;
  registries: Pick<RegistriesService, 'get'>;
  accounts: Pick<AccountsService, 'getSshKeys'>;
  clock: Clock;
  config: { catalog: Catalog; networking: { internalDomain: string }; ssh?: SshProxyAddress };
  /** The pods and GPUs quotas; without it, none apply. */
  quota?: Pick<ResourceQuota, 'admit' | 'released'>;
  /** Refuses images from registries the engine may not pull from (runtime docker). @default none: every image passes */
  registryGuard?: Pick<RegistryGuard, 'refusal'> | null;
  /** Whether the runtime replaces an image's entrypoint (its module's `entrypointOverride`), and its kind. */
  entrypoints: EntrypointSupport;
  /** Where a pod's own stop and termination times are kept (pod-deadline-sweep.ts acts on them). */
  deadlines: Pick<PodDeadlineStore, 'set'>;
  /** Where an interruption of a pod the reclaim ladder took back fails (pod-interruptions.ts). @default none */
  logger?: Pick<Logger, 'error'>;
  /** The pod HTTP proxy's URL of a pod's port, for `httpProxy` (pod-http-urls.ts). @default none */
  httpUrl?: PodHttpUrl | null;
  /** Removes suspended serverless workers the reclaim ladder took back (FlashBoot, worker-reclaim.ts). @default none */
  suspendedWorkers?: SuspendedWorkerReclaimer | undefined;
}

/** Accrued usage of one pod, for billing. */
export interface PodUsage {
  podId: string;
  /** hours the pod was RUNNING, open intervals counted up to now */
  hours: number;
  /** USD: Σ hours × the rate of each interval */
  cost: number;
}

const sameJson = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** Pod statuses whose instance is meant to be up (a change that restarts it restarts it now). */
const LIVE_STATUSES: ReadonlySet<PodRecord['status']> = new Set(['PROVISIONING', 'STARTING', 'RUNNING']);

export class PodsService {
  readonly #d: PodsServiceDeps;
  readonly #views: PodViews;
  readonly #creation: PodCreation;

  constructor(deps: PodsServiceDeps) {
    this.#d = deps;
    this.#views = new PodViews({ ...deps, hosts: deps.inventory });
    this.#creation = new PodCreation(deps, this.#views);
  }

  get store() {
    return this.#d.controller.store;
  }

  /** Validates, places and stores a pod (PROVISIONING); the controller starts it right after. */
  create(accountId: string, body: CreatePodInput): Promise<PodView> {
    return this.#creation.create(accountId, body);
  }

  /**
   * Creates a cluster's member pods (docs/clusters.md): one shape from `body`, all placed in one
   * data center or none — every member is reserved before any is stored, and a member that does
   * not fit releases those reserved before it (400 NO_CAPACITY). They are stored in one
   * transaction. `members[i].env` is platform env (rank, addresses) layered over the tenant's.
   */
  createGroup(
    accountId: string,
    body: CreatePodInput,
    group: { clusterId: string; members: ReadonlyArray<ClusterMemberInput> },
  ): Promise<PodRecord[]> {
    return this.#creation.createGroup(accountId, body, group);
  }

  /** Renders stored pods (a cluster's members) as the pod routes answer them. */
  async render(pods: readonly PodRecord[]): Promise<PodView[]> {
    return Promise.all(pods.map((p) => this.#views.render(p)));
  }

  /**
   * Terminates a cluster's member (DELETE /v2/clusters/{id}); the pod routes refuse to. A pod
   * already TERMINATED is left as it is.
   */
  async terminateMember(accountId: string, pod: PodRecord): Promise<void> {
    if (pod.status === 'TERMINATED') return;
    assertRuntimeAvailable(this.#d.runtime, 'The cluster cannot be deleted right now');
    await this.#d.controller.act(pod.id, 'terminate', { asCluster: true });
    this.#d.quota?.released(accountId);
  }

  /** The pod an SSH session's token names (the SSH proxy's lookup), or null. */
  bySshToken(token: string): Promise<SshPod | null> {
    return this.store.getBySshToken(token);
  }

  async get(accountId: string, id: string): Promise<PodView> {
    return this.#views.render(await this.#owned(accountId, id));
  }

  async list(accountId: string, filter: PodListFilter = {}): Promise<PodView[]> {
    const pods = await this.store.list(accountId, filter);
    return Promise.all(pods.map((p) => this.#views.render(p)));
  }

  /**
   * A page of the list (`GET /v2/pods?limit=…`, a Gantry extension): the same pods as `list`,
   * searched, sorted and sliced before rendering (only the page's pods are rendered), with the
   * figures of every pod that matches.
   */
  async listPage(accountId: string, filter: PodListFilter, query: PodPageQuery): Promise<PodPage<PodView>> {
    const pods = await this.store.list(accountId, filter);
    const page = await podPage(pods, query, async (matching) => {
      const now = this.#d.clock.now();
      const running = matching.filter((pod) => pod.status === 'RUNNING');
      const lives = await Promise.all(running.map((pod) => this.#d.runtime.inspect(pod.id)));
      // as the view's uptime counts (pod-view runtimeView)
      return new Map(running.map((pod, i) => [pod.id, lives[i]?.startedAt ?? pod.startedAt ?? now]));
    });
    return { ...page, pods: await Promise.all(page.pods.map((p) => this.#views.render(p))) };
  }

  /**
   * start, stop, restart (200 with the pod) and terminate. A stopped pod released its GPUs, so
   * its `start` takes them again under the GPU quota.
   */
  async act(accountId: string, id: string, action: PodAction): Promise<PodView> {
    const pod = await this.#owned(accountId, id);
    // stop and terminate reach the runtime too: while it is away they are refused (503) rather than
    // half done, and the pod stays as it is. A start also asks about the pod's own host (in a
    // fleet, another may be away: 409); a stop or terminate only about the runtime as a whole (a
    // fleet queues them for a host that is away and sends nothing to a revoked one, so a lost
    // host's pods can always be stopped and terminated).
    if (action === 'start' || action === 'restart') {
      assertRuntimeAvailable(this.#d.runtime, 'No instance can be started right now');
      assertHostReachable(this.#d.runtime, pod, action === 'start' ? 'started' : 'restarted');
    } else
      assertRuntimeAvailable(
        this.#d.runtime,
        `The pod cannot be ${action === 'stop' ? 'stopped' : 'terminated'} right now`,
      );
    const quota = this.#d.quota;
    if (action === 'start' && quota && pod.desiredStatus !== 'RUNNING' && pod.gpuCount > 0)
      return this.#views.render(
        await quota.admit(accountId, { pods: 0, gpus: pod.gpuCount }, () => this.#d.controller.act(id, action)),
      );
    const acted = await this.#d.controller.act(id, action);
    // Stopped pods give their GPUs back, terminated ones their place: room shows at once.
    if (action === 'stop' || action === 'terminate') quota?.released(accountId);
    return this.#views.render(acted);
  }

  /**
   * Starts a stopped GPU pod as an interruptible one bidding `bidPerGpu` (GraphQL podBidResume;
   * docs/pods.md): the bid is checked against its GPU type's floor in its cloud and becomes its
   * rate; then it starts as `start` does, on its own host (409 unless stopped, 400 HOST_FULL).
   */
  async bidResume(accountId: string, id: string, bidPerGpu: number): Promise<PodView> {
    const current = await this.#owned(accountId, id);
    if (current.gpuTypeId === null) throw new ApiError('BAD_REQUEST', `Pod "${id}" is a CPU pod: it has no bid.`);
    if (current.status !== 'EXITED' && current.status !== 'ERROR')
      throw new ApiError('INVALID_STATE', `Pod "${id}" is ${current.status}: podBidResume resumes a stopped pod.`);
    const bid = resolveBid(
      { bidPerGpu },
      { kind: 'gpu', gpuTypeId: current.gpuTypeId },
      current.cloud,
      this.#d.config.catalog,
    )!;
    await this.#d.controller.reconfigure(id, {}, (pod) => ({
      changes: { bidPerGpu: bid, costPerHr: bidCostPerHour(bid, pod.gpuCount) },
      restart: false,
      reallocate: false,
    }));
    return this.act(accountId, id, 'start');
  }

  /**
   * PATCH: the readable configuration (spec 2.3 rules for mounts). A change the instance sees
   * restarts a running pod on its host (a new container: its container disk starts empty, its
   * volume is kept). A cluster's member is refused (spec 2.7) unless `clusterMember`: GraphQL
   * `podEditJob` changes one as upstream does (dstack sets a member's registry credential so).
   */
  async update(
    accountId: string,
    id: string,
    patch: PatchPodInput,
    options: { clusterMember?: boolean } = {},
  ): Promise<PodView> {
    const current = await this.#owned(accountId, id);
    if (patch.globalNetworking !== undefined && patch.globalNetworking !== current.globalNetworking)
      throw new ApiError(
        'GLOBAL_NETWORKING_FIXED',
        `globalNetworking is fixed when a pod is created: pod "${id}" has it ${current.globalNetworking ? 'on' : 'off'}, and its private address and internal DNS name are attached to its instance at placement. Create a new pod with globalNetworking ${String(patch.globalNetworking)} instead.`,
      );
    const template = patch.templateId
      ? templateDefaults(await this.#d.templates.resolveForPod(accountId, patch.templateId))
      : null;
    const fields = effectivePatch(patch, template);
    if (fields.ports) checkPorts(fields.ports);
    // Only a new start command is judged: the one a pod holds is kept by every other change.
    if (fields.args !== undefined) assertStartCommand(this.#d.entrypoints, fields.args);
    if (fields.image !== undefined) await assertImageAllowed(this.#d.registryGuard, fields.image);
    if (patch.registry) await checkRegistry(this.#d.registries, accountId, patch.registry);
    const asCluster = options.clusterMember === true;
    const updated = await this.#d.controller.reconfigure(id, { asCluster }, (pod) => {
      const changes: PodChanges = {};
      if (fields.name !== undefined) changes.name = fields.name;
      if (fields.locked !== undefined) changes.locked = fields.locked;
      if (fields.image !== undefined) changes.image = fields.image;
      if (fields.args !== undefined) changes.args = fields.args;
      if (fields.disk !== undefined) changes.disk = fields.disk;
      if (fields.ports !== undefined) changes.ports = fields.ports;
      if (fields.registry !== undefined) changes.registry = fields.registry;
      if (fields.env !== undefined) changes.env = fields.envOverPod ? { ...pod.env, ...fields.env } : fields.env;
      // The image's allow-list may differ: a new image is checked against the env it will run with.
      if (changes.env !== undefined || changes.image !== undefined)
        assertEnvAllowed(this.#d.runtime, changes.env ?? pod.env, changes.image ?? pod.image);
      const mounts = applyMountPatch(pod.mounts, patch.mounts);
      if (!sameJson(mounts, pod.mounts)) changes.mounts = mounts;
      const differs = (k: (typeof RESTARTING_FIELDS)[number]): boolean =>
        changes[k] !== undefined && !sameJson(changes[k], pod[k]);
      const reallocate =
        differs('ports') || (changes.disk !== undefined && diskOf({ ...pod, ...changes }) !== diskOf(pod));
      const restart = RESTARTING_FIELDS.some(differs);
      // A running pod sees the change by restarting, which its host must be there for.
      if (restart && pod.desiredStatus === 'RUNNING' && LIVE_STATUSES.has(pod.status))
        assertHostReachable(this.#d.runtime, pod, 'restarted with the change');
      return { changes, restart, reallocate };
    });
    return this.#views.render(updated);
  }

  /** Accrued usage: each RUNNING interval's hours × its rate, open intervals up to now. */
  async usage(accountId: string, podId: string): Promise<PodUsage> {
    await this.#owned(accountId, podId);
    return { podId, ...accruedUsage(await this.store.listUsage(podId), this.#d.clock.now()) };
  }

  async #owned(accountId: string, id: string): Promise<PodRecord> {
    const pod = await this.store.getOwned(accountId, id);
    if (!pod) throw notFound('pod', id);
    return pod;
  }
}
