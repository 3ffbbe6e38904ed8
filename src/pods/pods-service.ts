/**
 * The pod use-cases: create, read, list, change, act. Rules live in pod-rules.ts, the lifecycle in
 * pod-controller.ts; this service checks ownership and references, places the pod and renders it.
 */
import { randomBytes } from 'node:crypto';
import type { AccountsService } from '../accounts/accounts-service.js';
import type { Catalog } from '../domain/catalog.js';
import { costPerHour } from '../domain/cost.js';
import type { Clock } from '../domain/clock.js';
import { ApiError, isApiError, notFound } from '../domain/errors.js';
import { newId, newSortableId } from '../domain/ids.js';
import type { PodAction } from '../domain/pod-state.js';
import type { Placement, PlacementRequest } from '../domain/placement.js';
import type { ClusterMember } from '../domain/cluster.js';
import type { Inventory } from '../inventory/inventory.js';
import type { RegistriesService } from '../registries/registries-service.js';
import { assertEnvAllowed } from '../runtime/env-allowed.js';
import { assertImageAllowed, type RegistryGuard } from '../runtime/registry-guard.js';
import type { Runtime } from '../runtime/runtime.js';
import type { PodChanges, PodListFilter, PodRecord, PortMapping } from '../store/pod-store.js';
import type { Template } from '../domain/template.js';
import type { TemplatesService } from '../templates/templates-service.js';
import type { VolumesService } from '../volumes/volumes-service.js';
import type { ResourceQuota } from '../quotas/resource-quota.js';
import { diskOf, parsePorts } from './pod-allocation.js';
import type { PodController } from './pod-controller.js';
import {
  RESTARTING_FIELDS,
  applyMountPatch,
  checkPorts,
  injectedEnv,
  resolveCreate,
  type CreatePodInput,
  type PatchPodInput,
  type PodSettings,
  type TemplateDefaults,
} from './pod-rules.js';
import { toPodView, type PodView, type SshProxyAddress } from './pod-view.js';
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
}

/** One member of a cluster to create: its pod name, rank/role/address and platform env. */
export interface ClusterMemberInput {
  name: string;
  cluster: ClusterMember;
  env: Record<string, string>;
}

/** Accrued usage of one pod, for billing. */
export interface PodUsage {
  podId: string;
  /** hours the pod was RUNNING, open intervals counted up to now */
  hours: number;
  /** USD: Σ hours × the rate of each interval */
  cost: number;
}

const templateDefaults = (t: Template): TemplateDefaults => ({
  image: t.imageName,
  args: t.args,
  disk: t.containerDiskInGb,
  ports: t.ports,
  env: t.env,
  registry: t.containerRegistryAuthId,
  volumeInGb: t.volumeInGb,
  volumeMountPath: t.volumeMountPath,
  startSsh: t.startSsh,
  startJupyter: t.startJupyter,
  allowedCudaVersions: t.allowedCudaVersions,
});

const generatePassword = (): string => randomBytes(18).toString('base64url');

const sameJson = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** Pod statuses whose instance is meant to be up (a change that restarts it restarts it now). */
const LIVE_STATUSES: ReadonlySet<PodRecord['status']> = new Set(['PROVISIONING', 'STARTING', 'RUNNING']);

export class PodsService {
  readonly #d: PodsServiceDeps;

  constructor(deps: PodsServiceDeps) {
    this.#d = deps;
  }

  get store() {
    return this.#d.controller.store;
  }

  /** Validates, places and stores a pod (PROVISIONING); the controller starts it right after. */
  async create(accountId: string, body: CreatePodInput): Promise<PodView> {
    this.#assertRuntimeAvailable();
    const { catalog } = this.#d.config;
    const template = body.templateId
      ? templateDefaults(await this.#d.templates.resolveForPod(accountId, body.templateId))
      : null;
    const settings = resolveCreate(body, template, catalog);
    assertEnvAllowed(this.#d.runtime, settings.env, settings.image);
    await assertImageAllowed(this.#d.registryGuard, settings.image);
    if (settings.registry !== null) await this.#checkRegistry(accountId, settings.registry);
    const volumeDataCenterId = settings.mounts.network?.length
      ? (await this.#volume(accountId, settings.mounts.network[0]!.volumeId)).dataCenterId
      : null;
    const sshKeys = settings.startSsh ? await this.#d.accounts.getSshKeys(accountId) : [];
    const hiddenEnv = injectedEnv(settings, sshKeys, generatePassword);

    const gpus = settings.compute.kind === 'gpu' ? settings.compute.count : 0;
    const quota = this.#d.quota;
    return quota
      ? quota.admit(accountId, { pods: 1, gpus }, () => this.#place(accountId, settings, volumeDataCenterId, hiddenEnv))
      : this.#place(accountId, settings, volumeDataCenterId, hiddenEnv);
  }

  /** Places, reserves and stores the pod (the step the quotas guard). */
  async #place(
    accountId: string,
    settings: PodSettings,
    volumeDataCenterId: string | null,
    hiddenEnv: Record<string, string>,
  ): Promise<PodView> {
    const id = newSortableId();
    const request = placementRequest(settings, volumeDataCenterId);
    const globalIp = settings.globalNetworking ? await this.#d.controller.addresses.allocate() : null;
    if (settings.globalNetworking && globalIp === null)
      throw new ApiError('NO_CAPACITY', 'No global networking address is free: the configured pool is exhausted.');
    const placed = this.#d.controller.instances.place(id, request);
    if (!placed.ok) {
      this.#d.controller.addresses.release(globalIp);
      throw new ApiError('NO_CAPACITY', placed.reason);
    }
    const pod = this.#record(id, accountId, settings, placed.placement, volumeDataCenterId, hiddenEnv, globalIp, null);
    try {
      await this.store.insert(pod);
    } catch (err) {
      this.#d.controller.instances.release(id);
      this.#d.controller.addresses.release(globalIp);
      throw err;
    }
    this.#d.controller.kick(id, pod);
    return this.#view(pod, { justCreated: true });
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
    this.#assertRuntimeAvailable();
    const { catalog } = this.#d.config;
    const settings = resolveCreate(body, null, catalog);
    assertEnvAllowed(this.#d.runtime, settings.env, settings.image);
    await assertImageAllowed(this.#d.registryGuard, settings.image);
    const volumeDataCenterId = settings.mounts.network?.length
      ? (await this.#volume(accountId, settings.mounts.network[0]!.volumeId)).dataCenterId
      : null;
    const sshKeys = settings.startSsh ? await this.#d.accounts.getSshKeys(accountId) : [];
    const n = group.members.length;
    const gpus = settings.compute.kind === 'gpu' ? settings.compute.count * n : 0;
    const place = async (): Promise<PodRecord[]> => {
      const ids = group.members.map(() => newSortableId());
      const placements = this.#placeAll(ids, placementRequest(settings, volumeDataCenterId));
      const pods = group.members.map((m, i) =>
        this.#record(
          ids[i]!,
          accountId,
          { ...settings, name: m.name },
          placements[i]!,
          volumeDataCenterId,
          { ...injectedEnv(settings, sshKeys, generatePassword), ...m.env },
          null,
          { id: group.clusterId, member: m.cluster },
        ),
      );
      try {
        await this.store.withTransaction(async (tx) => {
          for (const pod of pods) await this.store.insert(pod, tx);
        });
      } catch (err) {
        for (const id of ids) this.#d.controller.instances.release(id);
        throw err;
      }
      for (const pod of pods) this.#d.controller.kick(pod.id, pod);
      return pods;
    };
    const quota = this.#d.quota;
    return quota ? quota.admit(accountId, { pods: n, gpus }, place) : place();
  }

  /**
   * Reserves one allocation per id, all in one data center (the request's, else each one the
   * fleet has, in order), or none: synchronous, so no other create interleaves.
   */
  #placeAll(ids: readonly string[], request: PlacementRequest): Placement[] {
    const inventory = this.#d.inventory;
    const centers = request.volumeDataCenterId
      ? [request.volumeDataCenterId]
      : request.dataCenterIds.length > 0
        ? request.dataCenterIds
        : [...new Set(inventory.availableHosts().map((h) => h.dataCenterId))];
    let reason = 'no host is available';
    for (const dataCenterId of centers) {
      const placements: Placement[] = [];
      for (const id of ids) {
        const placed = inventory.placeAndReserve(id, { ...request, dataCenterIds: [dataCenterId] });
        if (!placed.ok) {
          reason = `${dataCenterId}: ${placed.reason}`;
          break;
        }
        placements.push(placed.placement);
      }
      if (placements.length === ids.length) return placements;
      for (const id of ids) inventory.release(id);
    }
    throw new ApiError(
      'NO_CAPACITY',
      `The ${ids.length} pods do not fit together in one data center, so none was created (${reason}).`,
    );
  }

  #record(
    id: string,
    accountId: string,
    settings: PodSettings,
    placement: Placement,
    volumeDataCenterId: string | null,
    hiddenEnv: Record<string, string>,
    globalIp: string | null,
    cluster: { id: string; member: ClusterMember } | null,
  ): PodRecord {
    const now = this.#d.clock.now();
    const compute = settings.compute;
    const portMappings: PortMapping[] = parsePorts(settings.ports).map((p, i) => ({
      ...p,
      public: placement.publicPorts[i]!,
    }));
    return {
      id,
      accountId,
      name: settings.name,
      status: 'PROVISIONING',
      desiredStatus: 'RUNNING',
      statusReason: null,
      image: settings.image,
      args: settings.args,
      disk: settings.disk,
      ports: settings.ports,
      env: settings.env,
      hiddenEnv,
      registry: settings.registry,
      gpuTypeId: compute.kind === 'gpu' ? compute.gpuTypeId : null,
      gpuCount: compute.kind === 'gpu' ? compute.count : 0,
      gpuIndices: placement.gpuIndices,
      cpuFlavorId: compute.kind === 'cpu' ? compute.flavorId : null,
      // a CPU pod's own; a GPU pod's allotment on the host it landed on (domain/gpu-allotment.ts)
      vcpuCount: placement.vcpus,
      memoryGb: placement.memoryGb,
      cloud: placement.cloud,
      dataCenterId: placement.dataCenterId,
      hostId: placement.hostId,
      cudaVersion: compute.kind === 'gpu' ? placement.cudaVersion : null,
      mounts: settings.mounts,
      portMappings,
      // No link to the template is retained (spec 2.1): it was a one-time source.
      templateId: null,
      locked: false,
      globalNetworking: settings.globalNetworking,
      globalIp,
      costPerHr: costPerHour(
        compute.kind === 'gpu'
          ? { kind: 'gpu', gpuTypeId: compute.gpuTypeId, gpuCount: compute.count, cloud: placement.cloud }
          : { kind: 'cpu', cpuFlavorId: compute.flavorId, vcpuCount: compute.vcpuCount, cloud: placement.cloud },
        this.#d.config.catalog,
      ),
      constraints: {
        dataCenterIds: settings.dataCenterIds,
        allowedCudaVersions: settings.allowedCudaVersions,
        minCudaVersion: settings.minCudaVersion,
        volumeDataCenterId,
      },
      cluster: cluster?.id ?? null,
      clusterMember: cluster?.member ?? null,
      createdAt: now,
      startedAt: null,
      updatedAt: now,
      statusChangedAt: now,
      terminatedAt: null,
      startSsh: settings.startSsh,
      // ≈134 bits: the proxy's routing token must not be guessable (docs/ssh.md)
      sshToken: newId(26),
    };
  }

  /** Renders stored pods (a cluster's members) as the pod routes answer them. */
  async render(pods: readonly PodRecord[]): Promise<PodView[]> {
    return Promise.all(pods.map((p) => this.#render(p)));
  }

  /**
   * Terminates a cluster's member (DELETE /v2/clusters/{id}); the pod routes refuse to. A pod
   * already TERMINATED is left as it is.
   */
  async terminateMember(accountId: string, pod: PodRecord): Promise<void> {
    if (pod.status === 'TERMINATED') return;
    this.#assertRuntimeAvailable('The cluster cannot be deleted right now');
    await this.#d.controller.act(pod.id, 'terminate', { asCluster: true });
    this.#d.quota?.released(accountId);
  }

  async get(accountId: string, id: string): Promise<PodView> {
    return this.#render(await this.#owned(accountId, id));
  }

  async list(accountId: string, filter: PodListFilter = {}): Promise<PodView[]> {
    const pods = await this.store.list(accountId, filter);
    return Promise.all(pods.map((p) => this.#render(p)));
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
    return { ...page, pods: await Promise.all(page.pods.map((p) => this.#render(p))) };
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
      this.#assertRuntimeAvailable('No instance can be started right now');
      this.#assertHostReachable(pod, action === 'start' ? 'started' : 'restarted');
    } else this.#assertRuntimeAvailable(`The pod cannot be ${action === 'stop' ? 'stopped' : 'terminated'} right now`);
    const quota = this.#d.quota;
    if (action === 'start' && quota && pod.desiredStatus !== 'RUNNING' && pod.gpuCount > 0)
      return this.#render(
        await quota.admit(accountId, { pods: 0, gpus: pod.gpuCount }, () => this.#d.controller.act(id, action)),
      );
    const acted = await this.#d.controller.act(id, action);
    // Stopped pods give their GPUs back, terminated ones their place: room shows at once.
    if (action === 'stop' || action === 'terminate') quota?.released(accountId);
    return this.#render(acted);
  }

  /** PATCH: the readable configuration (spec 2.3 rules for mounts). */
  async update(accountId: string, id: string, patch: PatchPodInput): Promise<PodView> {
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
    if (fields.image !== undefined) await assertImageAllowed(this.#d.registryGuard, fields.image);
    if (patch.registry) await this.#checkRegistry(accountId, patch.registry);
    const updated = await this.#d.controller.reconfigure(id, (pod) => {
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
        this.#assertHostReachable(pod, 'restarted with the change');
      return { changes, restart, reallocate };
    });
    return this.#render(updated);
  }

  /** Accrued usage: each RUNNING interval's hours × its rate, open intervals up to now. */
  async usage(accountId: string, podId: string): Promise<PodUsage> {
    await this.#owned(accountId, podId);
    const now = this.#d.clock.now();
    let hours = 0;
    let cost = 0;
    for (const u of await this.store.listUsage(podId)) {
      const h = Math.max(0, (u.endedAt ?? now) - u.startedAt) / 3_600_000;
      hours += h;
      cost += h * u.costPerHr;
    }
    return { podId, hours, cost };
  }

  // ---------------------------------------------------------------------------------------------

  /** 503 RUNTIME_UNAVAILABLE while the runtime as a whole cannot start instances: nothing is stored or reserved. */
  #assertRuntimeAvailable(what = 'No instance can be started right now'): void {
    const reason = this.#d.runtime.unavailable?.() ?? null;
    if (reason !== null)
      throw new ApiError(
        'RUNTIME_UNAVAILABLE',
        `${what}: ${reason}. Nothing was created or changed; try again once the runtime is back.`,
      );
  }

  /**
   * 409 HOST_UNAVAILABLE while the pod's own host cannot start anything (a fleet host that is
   * unreachable, or revoked): nothing is changed, and the detail says what still works.
   */
  #assertHostReachable(pod: PodRecord, what: string): void {
    const reason = pod.hostId === null ? null : (this.#d.runtime.unavailable?.(pod.hostId) ?? null);
    if (reason !== null)
      throw new ApiError(
        'HOST_UNAVAILABLE',
        `Pod "${pod.id}" cannot be ${what}: ${reason}. Nothing was changed. It can still be stopped or terminated; once its host reports again it can be started (a revoked host never does: terminate the pod and create a new one).`,
      );
  }

  async #owned(accountId: string, id: string): Promise<PodRecord> {
    const pod = await this.store.getOwned(accountId, id);
    if (!pod) throw notFound('pod', id);
    return pod;
  }

  async #checkRegistry(accountId: string, registryId: string): Promise<void> {
    try {
      await this.#d.registries.get(accountId, registryId);
    } catch (err) {
      if (isApiError(err) && err.code === 'NOT_FOUND')
        throw new ApiError(
          'UNKNOWN_REFERENCE',
          `Unknown registry "${registryId}": it is not one of this account's registry credentials (GET /v2/registries).`,
        );
      throw err;
    }
  }

  async #volume(accountId: string, volumeId: string) {
    try {
      return await this.#d.volumes.get(accountId, volumeId);
    } catch (err) {
      if (isApiError(err) && err.code === 'NOT_FOUND')
        throw new ApiError(
          'UNKNOWN_REFERENCE',
          `Unknown network volume "${volumeId}": it is not one of this account's volumes (GET /v2/network-volumes).`,
        );
      throw err;
    }
  }

  // Rendered views of unchanged records, reused within the same second while the instance's
  // state and utilisation are unchanged (uptime has one-second resolution). Keyed by the record
  // object, so a write (which replaces the cached record) or an uncached read never hits.
  readonly #views = new WeakMap<PodRecord, { key: string; view: PodView }>();

  async #render(pod: PodRecord): Promise<PodView> {
    const live = pod.status === 'RUNNING' ? await this.#d.runtime.inspect(pod.id) : null;
    const stats = live?.stats;
    const gpus = stats?.gpus?.map((g) => `${g.util}:${g.memoryUtil}`).join(',') ?? '';
    const key = `${Math.floor(this.#d.clock.now() / 1000)}|${live?.state ?? ''}|${stats?.cpuUtil ?? ''}|${stats?.memoryUtil ?? ''}|${gpus}`;
    const hit = this.#views.get(pod);
    if (hit && hit.key === key) return hit.view;
    const view = this.#view(pod, { live });
    if (Object.isFrozen(pod)) this.#views.set(pod, { key, view: Object.freeze(view) });
    return view;
  }

  #view(pod: PodRecord, extra: { live?: Awaited<ReturnType<Runtime['inspect']>>; justCreated?: boolean }): PodView {
    return toPodView(pod, {
      now: this.#d.clock.now(),
      hostIp: pod.hostId ? (this.#d.inventory.host(pod.hostId)?.publicIp ?? null) : null,
      live: extra.live ?? null,
      internalDomain: this.#d.config.networking.internalDomain,
      sshProxy: this.#d.config.ssh?.listening ? this.#d.config.ssh : null,
      justCreated: extra.justCreated ?? false,
    });
  }
}

/** What placement needs from the pod's settings. */
function placementRequest(settings: PodSettings, volumeDataCenterId: string | null): PlacementRequest {
  const c = settings.compute;
  return {
    kind: c.kind,
    gpuTypeIds: c.kind === 'gpu' ? [c.gpuTypeId] : [],
    gpuCount: c.kind === 'gpu' ? c.count : 0,
    cpuFlavorId: c.kind === 'cpu' ? c.flavorId : null,
    // a GPU pod's are the least it accepts: placement gives it its allotment on the host
    vcpuCount: c.kind === 'cpu' ? c.vcpuCount : c.minVcpus,
    memoryGb: c.kind === 'cpu' ? c.memoryGb : c.minMemoryGb,
    diskGb: diskOf(settings),
    cloud: settings.cloud,
    dataCenterIds: settings.dataCenterIds,
    volumeDataCenterId,
    allowedCudaVersions: settings.allowedCudaVersions,
    minCudaVersion: settings.minCudaVersion,
    portCount: settings.ports.length,
    globalNetworking: settings.globalNetworking,
  };
}

/**
 * A PATCH with `templateId` applies the template's image, args, disk, ports, registry and env as
 * if they were body fields; explicit body fields win. Its env is merged over the pod's env unless
 * the body sends `env` (a full replacement, merged over the template's).
 */
function effectivePatch(
  patch: PatchPodInput,
  template: TemplateDefaults | null,
): PatchPodInput & { envOverPod: boolean } {
  if (!template) return { ...patch, envOverPod: false };
  return {
    ...patch,
    image: patch.image ?? template.image,
    args: patch.args ?? template.args,
    disk: patch.disk ?? template.disk,
    ports: patch.ports ?? template.ports,
    registry: patch.registry !== undefined ? patch.registry : template.registry,
    env: patch.env !== undefined ? { ...template.env, ...patch.env } : template.env,
    envOverPod: patch.env === undefined,
  };
}
