import type { TypedApp } from '../type-provider.js';
import { Type, type Static } from '@sinclair/typebox';
import { iso } from '../../domain/clock.js';
import type { Services } from '../../services.js';
import type { Template } from '../../domain/template.js';
import { principalOf } from '../plugins/auth.js';
import { Deleted, errorResponses, IdParams } from '../schemas.js';
import { MAX_DISK_GB } from '../../domain/limits.js';

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

/** The fields a create and a PATCH may send; PATCH makes every one optional. */
const templateFields = {
  name: Type.String({ minLength: 1, maxLength: 191 }),
  imageName: Type.String({ minLength: 1, maxLength: 1024 }),
  args: Type.Optional(Type.String({ maxLength: 8192, description: 'start command / docker args; default ""' })),
  containerDiskInGb: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_DISK_GB, description: 'GB; default 20' })),
  volumeInGb: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: MAX_DISK_GB,
      description: 'persistent volume, GB: 0 (none, the default) or at least 10',
    }),
  ),
  volumeMountPath: Type.Optional(
    Type.Union([Type.String({ minLength: 1, maxLength: 1024 }), Type.Null()], {
      description: 'default "/workspace" when volumeInGb > 0',
    }),
  ),
  ports: Type.Optional(Ports),
  env: Type.Optional(Env),
  containerRegistryAuthId: Type.Optional(
    Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Null()], {
      description: 'one of your registry credentials (GET /v2/registries)',
    }),
  ),
  startSsh: Type.Optional(Type.Boolean()),
  startJupyter: Type.Optional(Type.Boolean()),
  allowedCudaVersions: Type.Optional(CudaVersions),
  isServerless: Type.Optional(Type.Boolean({ description: 'a template for serverless endpoints; pods cannot use it' })),
  isPublic: Type.Optional(
    Type.Boolean({ description: 'only false: public templates are the shipped catalog; true answers 403' }),
  ),
  category: Type.Optional(Category),
  readme: Type.Optional(Type.String({ maxLength: 65536 })),
};

const CreateTemplateRequest = Type.Object(templateFields, closed);
const PatchTemplateRequest = Type.Object(
  { ...templateFields, name: Type.Optional(templateFields.name), imageName: Type.Optional(templateFields.imageName) },
  { ...closed, description: 'Only the fields sent change; `containerRegistryAuthId: null` clears the registry.' },
);

/** A template as the REST API answers it (also the element of `GET /v2/catalog/templates`). */
export const TemplateSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  imageName: Type.String(),
  args: Type.String(),
  containerDiskInGb: Type.Integer(),
  volumeInGb: Type.Integer(),
  volumeMountPath: Type.Union([Type.String(), Type.Null()]),
  ports: Type.Array(Type.String()),
  env: Type.Record(Type.String(), Type.String()),
  containerRegistryAuthId: Type.Union([Type.String(), Type.Null()]),
  startSsh: Type.Boolean(),
  startJupyter: Type.Boolean(),
  allowedCudaVersions: Type.Array(Type.String()),
  isServerless: Type.Boolean(),
  isPublic: Type.Boolean(),
  category: Category,
  readme: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});
export type TemplateView = Static<typeof TemplateSchema>;

export const TemplateList = Type.Object({ templates: Type.Array(TemplateSchema) });

const ListQuery = Type.Object({
  includePublic: Type.Optional(Type.Boolean({ default: false, description: 'also list the public catalog templates' })),
});

/** Drops the owner and renders timestamps as ISO 8601. */
export const templateView = ({ accountId: _owner, createdAt, updatedAt, ...rest }: Template): TemplateView => ({
  ...rest,
  createdAt: iso(createdAt),
  updatedAt: iso(updatedAt),
});

const tags = ['templates'];

export function templateRoutes(app: TypedApp, { templates }: Services): void {
  app.post(
    '/v2/templates',
    {
      schema: {
        tags,
        summary: 'Create a template',
        body: CreateTemplateRequest,
        response: { 201: TemplateSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const created = await templates.create(principalOf(request).accountId, request.body);
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
        body: PatchTemplateRequest,
        response: { 200: TemplateSchema, ...errorResponses },
      },
    },
    async (request) =>
      templateView(await templates.update(principalOf(request).accountId, request.params.id, request.body)),
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
