import type { FastifyRequest } from 'fastify';
import { isObject, type TypedApp } from '../type-provider.js';
import { aliasHook } from '../field-aliases.js';
import { validationFailed } from '../../domain/errors.js';
import type { TemplatePatch } from '../../templates/templates-service.js';
import { Type, type Static } from '@sinclair/typebox';
import { iso } from '../../domain/clock.js';
import type { TransportServices } from '../../transport/services.js';
import type { Template } from '../../domain/template.js';
import { principalOf } from '../plugins/auth.js';
import { Deleted, errorResponses, IdParams, Nullable } from '../schemas.js';
import { MAX_DISK_GB } from '../../domain/limits.js';
import { StartCommandText } from '../schemas/pod-schemas.js';

const closed = { additionalProperties: false } as const;

const Category = Type.Unsafe<Template['category']>({ type: 'string', enum: ['NVIDIA', 'AMD', 'CPU'] });
const Ports = Type.Array(
  Type.String({ pattern: '^\\d{1,5}/(tcp|http|udp)$', description: '`<port>/<protocol>`, protocol tcp, http or udp' }),
  { maxItems: 64 },
);
const Env = Type.Record(Type.String(), Type.String({ maxLength: 32768 }), { maxProperties: 256 });
const CudaVersions = Type.Array(Type.String({ pattern: '^\\d+\\.\\d+$' }), {
  maxItems: 64,
  description: 'host CUDA versions a pod may run on, `<major>.<minor>`',
});

const Disk = Type.Integer({ minimum: 1, maximum: MAX_DISK_GB, description: 'container disk, GB; default 20' });
const Registry = Nullable(
  Type.String({
    minLength: 1,
    maxLength: 64,
    description: 'one of your registry credentials (GET /v2/registries); null: none',
  }),
);
/** PersistentMount: host-local storage, size and path together. */
const PersistentMount = Type.Object(
  {
    size: Type.Integer({ minimum: 10, maximum: MAX_DISK_GB, description: 'GB, at least 10' }),
    path: Type.String({ minLength: 1, maxLength: 1024, description: 'mount path in the container' }),
  },
  closed,
);
/** TemplateMounts: a template holds at most a persistent mount; `{}` (or no `mounts`) on PATCH leaves it. */
const TemplateMounts = Type.Object({ persistent: Type.Optional(PersistentMount) }, closed);

/** The fields a create and a PATCH may send (CreateTemplateRequest); PATCH makes every one optional. */
const templateFields = {
  name: Type.String({ minLength: 1, maxLength: 191 }),
  image: Type.String({ minLength: 1, maxLength: 1024, description: 'container image reference' }),
  args: Type.Optional(StartCommandText),
  disk: Type.Optional(Disk),
  ports: Type.Optional(Ports),
  env: Type.Optional(Env),
  registry: Type.Optional(Registry),
  mounts: Type.Optional(TemplateMounts),
  startSsh: Type.Optional(Type.Boolean({ description: 'inject PUBLIC_KEY from your ssh keys; default true' })),
  startJupyter: Type.Optional(Type.Boolean({ description: 'inject a JUPYTER_PASSWORD; default true' })),
  allowedCudaVersions: Type.Optional(CudaVersions),
  serverless: Type.Optional(Type.Boolean({ description: 'a template for serverless endpoints; pods cannot use it' })),
  public: Type.Optional(
    Type.Boolean({ description: 'only false: public templates are the shipped catalog; true answers 403' }),
  ),
  category: Type.Optional(Category),
};

const CreateTemplateRequest = Type.Object(
  { ...templateFields, category: Type.Optional({ ...Category, default: 'NVIDIA' }) },
  {
    ...closed,
    description:
      'Older names accepted (docs/api.md): imageName, containerDiskInGb, containerRegistryAuthId, isServerless, isPublic, volumeInGb + volumeMountPath (for mounts.persistent), readme.',
  },
);
const UpdateTemplateRequest = Type.Object(
  { ...templateFields, name: Type.Optional(templateFields.name), image: Type.Optional(templateFields.image) },
  {
    ...closed,
    description:
      'Only the fields sent change; `registry: null` clears the registry; `mounts` omitted or `{}` leaves the mount. The older names of the create are accepted too.',
  },
);

/** A template as the REST API answers it (also the element of `GET /v2/catalog/templates`). */
export const TemplateSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  image: Type.String(),
  args: Type.String(),
  disk: Type.Integer(),
  mounts: TemplateMounts,
  ports: Type.Array(Type.String()),
  env: Type.Record(Type.String(), Type.String()),
  registry: Nullable(Type.String()),
  serverless: Type.Boolean(),
  public: Type.Boolean(),
  category: Category,
  startSsh: Type.Boolean(),
  startJupyter: Type.Boolean(),
  allowedCudaVersions: Type.Array(Type.String()),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});
export type TemplateView = Static<typeof TemplateSchema>;

export const TemplateList = Type.Object({ templates: Type.Array(TemplateSchema) });

const ListQuery = Type.Object({
  includePublic: Type.Optional(Type.Boolean({ default: false, description: 'also list the public catalog templates' })),
});

/** The v2 view: v2 names, the volume as `mounts.persistent`, timestamps in ISO 8601; no owner. */
export const templateView = (t: Template): TemplateView => ({
  id: t.id,
  name: t.name,
  image: t.imageName,
  args: t.args,
  disk: t.containerDiskInGb,
  mounts: t.volumeInGb > 0 ? { persistent: { size: t.volumeInGb, path: t.volumeMountPath ?? '/workspace' } } : {},
  ports: t.ports,
  env: t.env,
  registry: t.containerRegistryAuthId,
  serverless: t.isServerless,
  public: t.isPublic,
  category: t.category,
  startSsh: t.startSsh,
  startJupyter: t.startJupyter,
  allowedCudaVersions: t.allowedCudaVersions,
  createdAt: iso(t.createdAt),
  updatedAt: iso(t.updatedAt),
});

type Fields = Partial<Static<typeof CreateTemplateRequest>>;

/** A v2 body in the service's names; only the fields sent, with the older fields set aside. */
const toInput = (b: Fields, older: TemplatePatch | undefined): TemplatePatch => ({
  ...(b.name !== undefined ? { name: b.name } : {}),
  ...(b.image !== undefined ? { imageName: b.image } : {}),
  ...(b.args !== undefined ? { args: b.args } : {}),
  ...(b.disk !== undefined ? { containerDiskInGb: b.disk } : {}),
  ...(b.ports !== undefined ? { ports: b.ports } : {}),
  ...(b.env !== undefined ? { env: b.env } : {}),
  ...(b.registry !== undefined ? { containerRegistryAuthId: b.registry } : {}),
  ...(b.mounts?.persistent !== undefined
    ? { volumeInGb: b.mounts.persistent.size, volumeMountPath: b.mounts.persistent.path }
    : {}),
  ...(b.startSsh !== undefined ? { startSsh: b.startSsh } : {}),
  ...(b.startJupyter !== undefined ? { startJupyter: b.startJupyter } : {}),
  ...(b.allowedCudaVersions !== undefined ? { allowedCudaVersions: b.allowedCudaVersions } : {}),
  ...(b.serverless !== undefined ? { isServerless: b.serverless } : {}),
  ...(b.public !== undefined ? { isPublic: b.public } : {}),
  ...(b.category !== undefined ? { category: b.category } : {}),
  ...older,
});

/**
 * Older fields that are not a rename, set aside by `setAsideOlderFields` and handed to the service
 * as they are: `volumeInGb` and `volumeMountPath` (the older form of `mounts.persistent`, with its
 * rules: a volume without a path mounts at /workspace, `volumeInGb: 0` is no volume) and `readme`
 * (which v2 templates do not have; REST v1 and GraphQL show it).
 */
const olderFields = new WeakMap<FastifyRequest, TemplatePatch>();
async function setAsideOlderFields(request: FastifyRequest): Promise<void> {
  const body = request.body;
  if (!isObject(body)) return;
  const sent = ['volumeInGb', 'volumeMountPath', 'readme'].filter((k) => Object.hasOwn(body, k));
  if (sent.length === 0) return;
  const { volumeInGb, volumeMountPath, readme } = body;
  for (const k of sent) delete body[k];
  const problems: string[] = [];
  if (Object.hasOwn(body, 'mounts'))
    for (const k of sent.filter((k) => k !== 'readme'))
      problems.push(`${k}: is the older form of mounts.persistent; send one of ${k} and mounts, not both`);
  if (volumeInGb !== undefined && !Number.isInteger(volumeInGb)) problems.push('volumeInGb: must be integer');
  if (
    volumeMountPath !== undefined &&
    volumeMountPath !== null &&
    (typeof volumeMountPath !== 'string' || volumeMountPath.length < 1 || volumeMountPath.length > 1024)
  )
    problems.push('volumeMountPath: must be a string of 1 to 1024 characters, or null');
  if (readme !== undefined && (typeof readme !== 'string' || readme.length > 65536))
    problems.push('readme: must be a string of at most 65536 characters');
  if (problems.length > 0) throw validationFailed(problems);
  olderFields.set(request, {
    ...(volumeInGb !== undefined ? { volumeInGb: volumeInGb as number } : {}),
    ...(volumeMountPath !== undefined ? { volumeMountPath: volumeMountPath as string | null } : {}),
    ...(readme !== undefined ? { readme: readme as string } : {}),
  });
}

/** The older names of the create and PATCH fields (docs/api.md). */
const renamed = aliasHook({
  imageName: 'image',
  containerDiskInGb: 'disk',
  containerRegistryAuthId: 'registry',
  isServerless: 'serverless',
  isPublic: 'public',
});

const tags = ['templates'];

export function templateRoutes(app: TypedApp, { templates }: TransportServices): void {
  app.post(
    '/v2/templates',
    {
      schema: {
        tags,
        summary: 'Create a template',
        body: CreateTemplateRequest,
        response: { 201: TemplateSchema, ...errorResponses },
      },
      preValidation: [setAsideOlderFields, renamed],
    },
    async (request, reply) => {
      const { name, image } = request.body;
      const created = await templates.create(principalOf(request).accountId, {
        // the v2 defaults (CreateTemplateRequest): SSH and Jupyter start unless turned off
        startSsh: true,
        startJupyter: true,
        ...toInput(request.body, olderFields.get(request)),
        name,
        imageName: image,
      });
      return reply.code(201).send(templateView(created));
    },
  );

  app.get(
    '/v2/templates',
    {
      schema: {
        tags,
        summary: 'List your templates (and, with includePublic, the public ones)',
        querystring: ListQuery,
        response: { 200: TemplateList, ...errorResponses },
      },
    },
    async (request) => {
      const { includePublic } = request.query;
      return {
        templates: (
          await templates.list(principalOf(request).accountId, { includePublic: includePublic === true })
        ).map(templateView),
      };
    },
  );

  app.get(
    '/v2/templates/:id',
    {
      schema: {
        tags,
        summary: 'Get one of your templates or a public one',
        params: IdParams,
        response: { 200: TemplateSchema, ...errorResponses },
      },
    },
    async (request) => templateView(await templates.get(principalOf(request).accountId, request.params.id)),
  );

  app.patch(
    '/v2/templates/:id',
    {
      schema: {
        tags,
        summary: 'Change one of your templates',
        description:
          'Pods already created from the template keep their settings. Public templates cannot be changed (404).',
        params: IdParams,
        body: UpdateTemplateRequest,
        response: { 200: TemplateSchema, ...errorResponses },
      },
      preValidation: [setAsideOlderFields, renamed],
    },
    async (request) =>
      templateView(
        await templates.update(
          principalOf(request).accountId,
          request.params.id,
          toInput(request.body, olderFields.get(request)),
        ),
      ),
  );

  app.delete(
    '/v2/templates/:id',
    {
      schema: {
        tags,
        summary: 'Delete one of your templates',
        description:
          'Public templates answer 404. A template a live pod or a serverless endpoint references answers 400 TEMPLATE_IN_USE.',
        params: IdParams,
        response: { 204: Deleted, ...errorResponses },
      },
    },
    async (request, reply) => {
      await templates.delete(principalOf(request).accountId, request.params.id);
      return reply.code(204).send();
    },
  );
}
