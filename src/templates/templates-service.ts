import type { Clock } from '../domain/clock.js';
import { ApiError, notFound, validationFailed } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { assertEnvAllowed } from '../runtime/env-allowed.js';
import { assertImageAllowed, type RegistryGuard } from '../runtime/registry-guard.js';
import type { Runtime } from '../runtime/runtime.js';
import type { RegistryStore } from '../store/registry-store.js';
import type { TemplateStore, TemplateChanges } from '../store/template-store.js';
import { publicTemplates as shippedTemplates, type PublicTemplate } from './public-templates.js';
import type { Template } from '../domain/template.js';
import { MAX_DISK_GB } from '../domain/limits.js';
import { assertEntrypointSupported, checkStartCommand, type EntrypointSupport } from '../domain/start-command.js';
import { checkMountPath } from '../domain/mounts.js';

/** The body of a template create (REST field names); omitted fields take their defaults. */
export interface TemplateInput {
  name: string;
  imageName: string;
  /** @default "" */
  args?: string;
  /** @default 20 */
  containerDiskInGb?: number;
  /** 0 (no volume) or at least 10. @default 0 */
  volumeInGb?: number;
  /** @default "/workspace" when volumeInGb > 0, else null */
  volumeMountPath?: string | null;
  /** @default [] */
  ports?: string[];
  /** @default {} */
  env?: Record<string, string>;
  /** One of the caller's registry credentials. @default null */
  containerRegistryAuthId?: string | null;
  /** @default false */
  startSsh?: boolean;
  /** @default false */
  startJupyter?: boolean;
  /** @default [] */
  allowedCudaVersions?: string[];
  /** @default false */
  isServerless?: boolean;
  /** Only false: public templates come from the catalog. @default false */
  isPublic?: boolean;
  /** @default "NVIDIA" */
  category?: Template['category'];
  /** @default "" */
  readme?: string;
}

export type TemplatePatch = Partial<TemplateInput>;

/**
 * Answers why a template cannot be deleted (e.g. `bound to serverless endpoint "abc"`), or null
 * when it does not hold the template. Registered by features that reference templates, so that
 * this service needs no knowledge of them.
 */
export type TemplateReferenceChecker = (templateId: string, accountId: string) => Promise<string | null>;

export interface TemplatesServiceDeps {
  store: TemplateStore;
  /** Where a template's `containerRegistryAuthId` is checked to be the account's. */
  registries: Pick<RegistryStore, 'get'>;
  clock: Clock;
  /** Extension point for references other than pods (serverless endpoints). @default [] */
  referenceCheckers?: TemplateReferenceChecker[];
  /** Refuses env the runtime will not pass to instances: a template's env reaches every pod and worker made from it. @default accepts all */
  runtime?: Pick<Runtime, 'refusedEnv'>;
  /** Refuses an `imageName` from a registry the engine may not pull from (runtime docker): it reaches every pod and worker made from the template. @default none: every image passes */
  registryGuard?: Pick<RegistryGuard, 'refusal'> | null;
  /**
   * Whether the runtime replaces an image's entrypoint: a template whose args do is refused where
   * it cannot (every pod and worker made from it would be). @default it can
   */
  entrypoints?: EntrypointSupport;
  /** The catalog templates `seedPublic` installs. @default the ones in public-templates.ts */
  publicTemplates?: readonly PublicTemplate[];
}

const PORT = /^(\d{1,5})\/(tcp|http|udp)$/;
const CUDA = /^\d+\.\d+$/;
const DEFAULT_MOUNT_PATH = '/workspace';

/** The rules JSON Schema cannot say (or that non-HTTP callers skip); one entry per violation. */
function violations(t: Template): string[] {
  const out: string[] = [];
  if (t.name.length === 0) out.push('name: must NOT have fewer than 1 characters');
  if (t.imageName.length === 0) out.push('image: must NOT have fewer than 1 characters');
  if (!Number.isInteger(t.containerDiskInGb) || t.containerDiskInGb < 1 || t.containerDiskInGb > MAX_DISK_GB)
    out.push(`disk: must be an integer from 1 to ${MAX_DISK_GB}`);
  if (!Number.isInteger(t.volumeInGb) || (t.volumeInGb !== 0 && t.volumeInGb < 10) || t.volumeInGb > MAX_DISK_GB)
    out.push(`mounts.persistent.size (volumeInGb): must be 0 (no volume) or from 10 to ${MAX_DISK_GB}`);
  t.ports.forEach((p, i) => {
    const m = PORT.exec(p);
    if (!m) out.push(`ports.${i}: must be "<port>/<protocol>" with protocol tcp, http or udp`);
    else if (Number(m[1]) < 1 || Number(m[1]) > 65535) out.push(`ports.${i}: port ${m[1]} is outside 1-65535`);
  });
  t.allowedCudaVersions.forEach((v, i) => {
    if (!CUDA.test(v)) out.push(`allowedCudaVersions.${i}: must be "<major>.<minor>"`);
  });
  return out;
}

const sameContent = (stored: Template, shipped: PublicTemplate): boolean =>
  (Object.keys(shipped) as Array<keyof PublicTemplate>).every(
    (k) => JSON.stringify(stored[k]) === JSON.stringify(shipped[k]),
  );

/** Templates: the accounts' own, and the public catalog ones shipped with Gantry. */
export class TemplatesService {
  readonly store: TemplateStore;
  readonly #registries: Pick<RegistryStore, 'get'>;
  readonly #checkers: TemplateReferenceChecker[];

  constructor(private readonly deps: TemplatesServiceDeps) {
    this.store = deps.store;
    this.#registries = deps.registries;
    this.#checkers = [...(deps.referenceCheckers ?? [])];
  }

  /** Adds a reference checker after construction, for services built after this one. */
  addReferenceChecker(checker: TemplateReferenceChecker): void {
    this.#checkers.push(checker);
  }

  async create(accountId: string, input: TemplateInput): Promise<Template> {
    if (input.isPublic === true) throw publicRefused();
    const now = this.deps.clock.now();
    const volumeInGb = input.volumeInGb ?? 0;
    const template: Template = {
      id: newId(),
      accountId,
      name: input.name,
      imageName: input.imageName,
      args: input.args ?? '',
      containerDiskInGb: input.containerDiskInGb ?? 20,
      volumeInGb,
      volumeMountPath: input.volumeMountPath ?? (volumeInGb > 0 ? DEFAULT_MOUNT_PATH : null),
      ports: input.ports ?? [],
      env: input.env ?? {},
      containerRegistryAuthId: input.containerRegistryAuthId ?? null,
      startSsh: input.startSsh ?? false,
      startJupyter: input.startJupyter ?? false,
      allowedCudaVersions: input.allowedCudaVersions ?? [],
      isServerless: input.isServerless ?? false,
      isPublic: false,
      category: input.category ?? 'NVIDIA',
      readme: input.readme ?? '',
      createdAt: now,
      updatedAt: now,
    };
    await this.#check(accountId, template, { image: true, mountPath: true, args: true });
    await this.store.insert(template);
    return template;
  }

  /** The caller's templates, followed by the public ones when asked. */
  async list(accountId: string, options: { includePublic?: boolean } = {}): Promise<Template[]> {
    const own = await this.store.listOwned(accountId);
    return options.includePublic ? [...own, ...(await this.store.listPublic())] : own;
  }

  /** The caller's own template or a public one; anything else is 404 NOT_FOUND. */
  async get(accountId: string, id: string): Promise<Template> {
    const template = await this.store.get(id);
    if (!template || !(template.accountId === accountId || template.isPublic)) throw notFound('template', id);
    return template;
  }

  /** Changes the caller's own template; a public one is 404, as if it did not exist. */
  async update(accountId: string, id: string, patch: TemplatePatch): Promise<Template> {
    const current = await this.#owned(accountId, id);
    if (patch.isPublic === true) throw publicRefused();
    const { isPublic: _ignored, ...fields } = patch;
    const changes: TemplateChanges = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
    const next: Template = { ...current, ...changes, updatedAt: this.deps.clock.now() };
    if (next.volumeInGb > 0 && next.volumeMountPath === null) next.volumeMountPath = DEFAULT_MOUNT_PATH;
    // The image is judged when it changes: a stored one is judged again by the runtime before a pull.
    // So is the mount path: a pod made from the template has its own judged at create.
    await this.#check(accountId, next, {
      image: patch.imageName !== undefined,
      mountPath: patch.volumeMountPath !== undefined,
      args: patch.args !== undefined,
    });
    const { id: _id, accountId: _a, isPublic: _p, createdAt: _c, ...stored } = next;
    if (!(await this.store.update(id, stored))) throw notFound('template', id);
    return next;
  }

  /**
   * Deletes the caller's own template (spec 4.3). A public or another account's template is 404;
   * one a live pod was created from, or that a reference checker holds, is 400 TEMPLATE_IN_USE.
   */
  async delete(accountId: string, id: string): Promise<void> {
    await this.#owned(accountId, id);
    const pods = await this.store.podsReferencing(accountId, id);
    if (pods.length > 0)
      throw new ApiError(
        'TEMPLATE_IN_USE',
        `Template "${id}" is referenced by pod(s) ${pods.map((p) => `"${p}"`).join(', ')}; terminate them before deleting it.`,
      );
    for (const check of this.#checkers) {
      const reason = await check(id, accountId);
      if (reason !== null)
        throw new ApiError('TEMPLATE_IN_USE', `Template "${id}" cannot be deleted: it is ${reason}.`);
    }
    if (!(await this.store.delete(id))) throw notFound('template', id);
  }

  /**
   * The template a pod create names: the caller's own or a public one.
   * Unknown or another account's → 404 NOT_FOUND; a serverless template → 422 SERVERLESS_TEMPLATE.
   */
  async resolveForPod(accountId: string, templateId: string): Promise<Template> {
    const template = await this.get(accountId, templateId);
    if (template.isServerless)
      throw new ApiError(
        'SERVERLESS_TEMPLATE',
        `Template "${templateId}" is a serverless template; pods need a pod template (one with serverless false).`,
      );
    return template;
  }

  /** The public catalog templates (`GET /v2/catalog/templates`). */
  async listPublic(): Promise<Template[]> {
    return this.store.listPublic();
  }

  /** A public catalog template, or 404 NOT_FOUND for an unknown or non-public id. */
  async getPublic(id: string): Promise<Template> {
    const template = await this.store.get(id);
    if (!template || !template.isPublic) throw new ApiError('NOT_FOUND', `No public template with id "${id}" exists.`);
    return template;
  }

  /** Installs the shipped public templates, or brings them up to date; idempotent, and safe when replicas start together. */
  async seedPublic(): Promise<void> {
    const now = this.deps.clock.now();
    for (const shipped of this.deps.publicTemplates ?? shippedTemplates) {
      const stored = await this.store.get(shipped.id);
      if (!stored) {
        await this.store.insertIfMissing({
          ...shipped,
          accountId: null,
          isPublic: true,
          createdAt: now,
          updatedAt: now,
        });
      } else if (stored.isPublic && stored.accountId === null && !sameContent(stored, shipped)) {
        const { id: _id, ...fields } = shipped;
        await this.store.update(shipped.id, { ...fields, updatedAt: now });
      }
    }
  }

  async #owned(accountId: string, id: string): Promise<Template> {
    const template = await this.store.get(id);
    if (!template || template.accountId !== accountId) throw notFound('template', id);
    return template;
  }

  async #check(
    accountId: string,
    template: Template,
    what: { image: boolean; mountPath: boolean; args: boolean },
  ): Promise<void> {
    const problems = violations(template);
    if (problems.length > 0) throw validationFailed(problems);
    if (what.args) {
      checkStartCommand(template.args);
      if (this.deps.entrypoints) assertEntrypointSupported(this.deps.entrypoints, template.args);
    }
    if (what.mountPath && template.volumeMountPath !== null)
      checkMountPath('mounts.persistent.path (volumeMountPath)', template.volumeMountPath);
    assertEnvAllowed(this.deps.runtime, template.env, template.imageName);
    if (what.image) await assertImageAllowed(this.deps.registryGuard, template.imageName, 'image');
    const registryId = template.containerRegistryAuthId;
    if (registryId !== null && !(await this.#registries.get(accountId, registryId)))
      throw new ApiError(
        'UNKNOWN_REFERENCE',
        `registry "${registryId}" is not a registry credential of this account (see GET /v2/registries).`,
      );
  }
}

const publicRefused = (): ApiError =>
  new ApiError(
    'FORBIDDEN',
    'Templates cannot be made public through the API: public templates are the catalog that ships with Gantry (GET /v2/catalog/templates). Send public false or leave it out.',
  );
