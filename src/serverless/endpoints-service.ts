import type { AccountsService } from '../accounts/accounts-service.js';
import type { Clock } from '../domain/clock.js';
import { ApiError, isApiError, notFound, validationFailed } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { assertEnvAllowed } from '../runtime/env-allowed.js';
import type { Runtime } from '../runtime/runtime.js';
import type { EndpointStore } from '../store/endpoint-store.js';
import type { Template } from '../domain/template.js';
import type { TemplateReferenceChecker, TemplatesService } from '../templates/templates-service.js';
import type { VolumesService } from '../volumes/volumes-service.js';
import type { Catalog } from '../domain/catalog.js';
import type { Endpoint, EndpointRelease, EndpointWorker, ReleaseDiffEntry } from '../domain/endpoint.js';
import { releaseDiff, releaseOf, releaseSnapshot, isStale, type ReleaseHistory } from './endpoint-releases.js';
import {
  ENDPOINT_DEFAULTS,
  endpointViolations,
  mergeEndpointSettings,
  type EndpointInput,
  type EndpointSettings,
} from './endpoint-settings.js';

export interface EndpointsServiceDeps {
  store: EndpointStore;
  clock: Clock;
  templates: Pick<TemplatesService, 'get'>;
  volumes: Pick<VolumesService, 'get'>;
  config: { catalog: Pick<Catalog, 'pools' | 'dataCenters' | 'cpuFlavors'> };
  /** Refuses env the runtime will not pass to the endpoint's workers. @default accepts all */
  runtime?: Pick<Runtime, 'refusedEnv'>;
  /** Upper bound of `workersMax`. @default 100 */
  maxWorkers?: number;
  /** Keys bound to an endpoint (its workers' `worker` keys) are revoked when it is deleted. */
  keys?: Pick<AccountsService, 'revokeEndpointKeys'>;
}

/** Serverless endpoints: their settings and the rules on them. Workers and jobs live elsewhere. */
export class EndpointsService {
  readonly store: EndpointStore;

  constructor(private readonly deps: EndpointsServiceDeps) {
    this.store = deps.store;
  }

  /** Creates the endpoint and its first release (version 1), in one transaction. */
  async create(accountId: string, input: EndpointInput): Promise<Endpoint> {
    const { settings, template } = await this.#settings(accountId, ENDPOINT_DEFAULTS, input);
    const now = this.deps.clock.now();
    const endpoint: Endpoint = { id: newId(), accountId, ...settings, createdAt: now, updatedAt: now, version: 1 };
    await this.store.transaction(async (tx) => {
      await this.store.insert(endpoint, tx);
      await this.store.insertRelease(
        this.#release(endpoint, releaseDiff(null, releaseSnapshot(settings, template))),
        tx,
      );
    });
    return endpoint;
  }

  /** The endpoint's releases, newest first, with the workers on each and the rollout of the latest. */
  async releases(accountId: string, id: string): Promise<ReleaseHistory> {
    const endpoint = await this.get(accountId, id);
    const [releases, workers] = await Promise.all([this.store.releases(id), this.store.workers(id)]);
    const live = workers.filter((w) => w.status !== 'dead');
    const counts = new Map<number, number>();
    for (const w of live) {
      const v = releaseOf(releases, w.endpointVersion);
      if (v !== null) counts.set(v, (counts.get(v) ?? 0) + 1);
    }
    const latest = releases[0]?.version ?? endpoint.version;
    const onLatest = live.filter((w) => w.endpointVersion !== null && w.endpointVersion >= latest).length;
    return {
      endpointVersion: endpoint.version,
      rollout: {
        inProgress: live.some((w) => isStale(releases, w)),
        workersOnLatest: onLatest,
        workersTotal: live.length,
        percentOnLatest: live.length === 0 ? 0 : Math.floor((onLatest * 100) / live.length),
      },
      releases: releases.map((r) => ({ ...r, workerCount: counts.get(r.version) ?? 0 })),
    };
  }

  /** The endpoint's live workers with its releases (newest first), for staleness. */
  async workersWithReleases(
    accountId: string,
    id: string,
  ): Promise<{ endpoint: Endpoint; workers: EndpointWorker[]; releases: EndpointRelease[] }> {
    const endpoint = await this.get(accountId, id);
    const [releases, workers] = await Promise.all([this.store.releases(id), this.store.workers(id)]);
    return { endpoint, workers: workers.filter((w) => w.status !== 'dead'), releases };
  }

  #release(endpoint: Endpoint, diff: ReleaseDiffEntry[]): EndpointRelease {
    return {
      id: newId(),
      endpointId: endpoint.id,
      accountId: endpoint.accountId,
      version: endpoint.version,
      source: 'MANUAL',
      diff,
      createdAt: endpoint.updatedAt,
    };
  }

  async list(accountId: string): Promise<Endpoint[]> {
    return this.store.list(accountId);
  }

  /** The caller's endpoint, or 404 NOT_FOUND (also for another account's). */
  async get(accountId: string, id: string): Promise<Endpoint> {
    const endpoint = await this.store.get(accountId, id);
    if (!endpoint) throw notFound('serverless endpoint', id);
    return endpoint;
  }

  /**
   * Full replace (GraphQL `saveEndpoint` with an id): fields not given take their defaults, but for
   * Gantry's own `flashBootKeepSeconds`, kept when not given (clients of the platform's schema,
   * runpodctl among them, never send it; null resets it).
   */
  async replace(accountId: string, id: string, input: EndpointInput): Promise<Endpoint> {
    return this.#change(
      accountId,
      id,
      (current) => ({ ...ENDPOINT_DEFAULTS, flashBootKeepSeconds: current.flashBootKeepSeconds }),
      input,
    );
  }

  /** Partial update (REST PATCH): only the fields given change. */
  async update(accountId: string, id: string, patch: EndpointInput): Promise<Endpoint> {
    return this.#change(accountId, id, (current) => current, patch);
  }

  /** Refused with 400 ENDPOINT_HAS_WORKERS unless workersMin and workersMax are both 0 (spec 3.2). */
  async delete(accountId: string, id: string): Promise<void> {
    const endpoint = await this.get(accountId, id);
    if (endpoint.workersMin !== 0 || endpoint.workersMax !== 0)
      throw new ApiError(
        'ENDPOINT_HAS_WORKERS',
        `Endpoint "${endpoint.name}" (${id}) still allows workers (workersMin ${endpoint.workersMin}, workersMax ${endpoint.workersMax}); set both to 0 first, then delete it.`,
      );
    if (!(await this.store.delete(accountId, id))) throw notFound('serverless endpoint', id);
    await this.deps.keys?.revokeEndpointKeys(id);
  }

  /** The endpoint's workers (filled by the autoscaler). */
  async workers(accountId: string, id: string): Promise<EndpointWorker[]> {
    await this.get(accountId, id);
    return this.store.workers(id);
  }

  /** The endpoint's template, or null when it has gone (templates bound to endpoints cannot be deleted). */
  async templateOf(endpoint: Endpoint): Promise<Template | null> {
    try {
      return await this.deps.templates.get(endpoint.accountId, endpoint.templateId);
    } catch (err) {
      if (isApiError(err) && err.code === 'NOT_FOUND') return null;
      throw err;
    }
  }

  /** Registered with TemplatesService: a template bound to an endpoint cannot be deleted. */
  readonly templateReferenceChecker: TemplateReferenceChecker = async (templateId, accountId) => {
    const bound = await this.store.boundToTemplate(accountId, templateId);
    if (bound.length === 0) return null;
    const names = bound.map((e) => `"${e.name}" (${e.id})`).join(', ');
    return `used by serverless endpoint${bound.length > 1 ? 's' : ''} ${names}; point ${bound.length > 1 ? 'them' : 'it'} at another template or delete ${bound.length > 1 ? 'them' : 'it'} first`;
  };

  async #change(
    accountId: string,
    id: string,
    base: (current: Endpoint) => EndpointSettings,
    input: EndpointInput,
  ): Promise<Endpoint> {
    const current = await this.get(accountId, id);
    const before = releaseSnapshot(current, await this.templateOf(current));
    const { settings, template } = await this.#settings(accountId, base(current), input);
    const next: Endpoint = { ...current, ...settings, updatedAt: this.deps.clock.now(), version: current.version + 1 };
    const diff = releaseDiff(before, releaseSnapshot(settings, template));
    await this.store.transaction(async (tx) => {
      if (!(await this.store.replace(next, current.version, tx)))
        throw new ApiError(
          'CONFLICT',
          `Endpoint "${id}" was changed by another request meanwhile; read it again and retry.`,
        );
      if (diff.length > 0) await this.store.insertRelease(this.#release(next, diff), tx);
    });
    return next;
  }

  async #settings(
    accountId: string,
    base: EndpointSettings,
    input: EndpointInput,
  ): Promise<{ settings: EndpointSettings; template: Template }> {
    const { settings, problems } = mergeEndpointSettings(base, input);
    problems.push(...endpointViolations(settings, this.deps.config.catalog, this.deps.maxWorkers ?? 100));
    if (problems.length > 0) throw validationFailed(problems);
    const template = await this.deps.templates.get(accountId, settings.templateId);
    if (!template.isServerless)
      throw new ApiError(
        'NOT_SERVERLESS_TEMPLATE',
        `Template "${template.name}" (${template.id}) is a pod template; an endpoint needs a serverless template (create one with isServerless true).`,
      );
    assertEnvAllowed(this.deps.runtime, settings.env, template.imageName);
    if (settings.networkVolumeId !== null) {
      try {
        await this.deps.volumes.get(accountId, settings.networkVolumeId);
      } catch (err) {
        if (isApiError(err) && err.code === 'NOT_FOUND')
          throw new ApiError(
            'UNKNOWN_REFERENCE',
            `networkVolumeId "${settings.networkVolumeId}" is not a network volume of this account (see GET /v2/network-volumes).`,
          );
        throw err;
      }
    }
    return { settings, template };
  }
}
