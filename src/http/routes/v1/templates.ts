/** REST v1 templates (`/v1/templates`): v1 names and shapes over TemplatesService. */
import type { TypedApp } from '../../type-provider.js';
import { Type, type Static } from '@sinclair/typebox';
import type { TransportServices } from '../../../transport/services.js';
import type { Template } from '../../../domain/template.js';
import type { TemplateInput, TemplatePatch } from '../../../templates/templates-service.js';
import { principalOf } from '../../plugins/auth.js';
import { MAX_DISK_GB } from '../../../domain/limits.js';
import {
  argsOf,
  closed,
  Deleted,
  Entrypoint,
  Env,
  errorResponses,
  IdParam,
  StartCmd,
  updatedArgs,
  v1StartOf,
} from './common.js';

const tags = ['templates'];
const Params = IdParam('templateId');
type Params = Static<typeof Params>;
const Category = Type.Unsafe<Template['category']>({ type: 'string', enum: ['NVIDIA', 'AMD', 'CPU'] });

const fields = {
  name: Type.String({ minLength: 1, maxLength: 191 }),
  imageName: Type.String({ minLength: 1, maxLength: 1024 }),
  category: Type.Optional(Category),
  containerDiskInGb: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_DISK_GB, description: 'GB; default 50' })),
  volumeInGb: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: MAX_DISK_GB,
      description: 'GB: 0 (none) or at least 10; default 20 (0 for serverless templates)',
    }),
  ),
  volumeMountPath: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'default /workspace' })),
  containerRegistryAuthId: Type.Optional(Type.String({ maxLength: 64, description: '"" = none' })),
  dockerEntrypoint: Type.Optional(Entrypoint),
  dockerStartCmd: Type.Optional(StartCmd),
  env: Type.Optional(Env),
  isPublic: Type.Optional(Type.Boolean({ description: 'only false: public templates are the shipped catalog' })),
  isServerless: Type.Optional(Type.Boolean({ default: false })),
  ports: Type.Optional(
    Type.Array(Type.String({ pattern: '^\\d{1,5}/(tcp|http|udp)$' }), {
      maxItems: 64,
      description: 'default ["8888/http", "22/tcp"] (none for serverless templates)',
    }),
  ),
  readme: Type.Optional(Type.String({ maxLength: 65536 })),
};
const CreateBody = Type.Object(fields, closed);
const { isServerless: _fixed, ...updatable } = fields;
const UpdateBody = Type.Object(
  { ...updatable, name: Type.Optional(fields.name), imageName: Type.Optional(fields.imageName) },
  { ...closed, description: 'Only the fields sent change.' },
);

const TemplateSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  imageName: Type.String(),
  category: Category,
  containerDiskInGb: Type.Integer(),
  volumeInGb: Type.Integer(),
  volumeMountPath: Type.Optional(Type.String()),
  containerRegistryAuthId: Type.Optional(Type.String()),
  dockerEntrypoint: Type.Array(Type.String()),
  dockerStartCmd: Type.Array(Type.String()),
  env: Type.Record(Type.String(), Type.String()),
  isPublic: Type.Boolean(),
  isRunpod: Type.Boolean({ description: 'true for the catalog templates shipped with Gantry' }),
  isServerless: Type.Boolean(),
  ports: Type.Array(Type.String()),
  readme: Type.String(),
  earned: Type.Number(),
  runtimeInMin: Type.Integer(),
});
export type TemplateV1 = Static<typeof TemplateSchema>;
export { TemplateSchema as TemplateV1Schema };

const Includes = Type.Object({
  includePublicTemplates: Type.Optional(Type.Boolean({ default: false })),
  includeRunpodTemplates: Type.Optional(Type.Boolean({ default: false })),
  includeEndpointBoundTemplates: Type.Optional(
    Type.Boolean({ default: false, description: 'accepted: your endpoint-bound templates are always listed' }),
  ),
});
type Includes = Static<typeof Includes>;

export const templateV1View = (t: Template): TemplateV1 => ({
  id: t.id,
  name: t.name,
  imageName: t.imageName,
  category: t.category,
  containerDiskInGb: t.containerDiskInGb,
  volumeInGb: t.volumeInGb,
  ...(t.volumeMountPath !== null ? { volumeMountPath: t.volumeMountPath } : {}),
  ...(t.containerRegistryAuthId !== null ? { containerRegistryAuthId: t.containerRegistryAuthId } : {}),
  ...v1StartOf(t.args),
  env: t.env,
  isPublic: t.isPublic,
  isRunpod: t.accountId === null,
  isServerless: t.isServerless,
  ports: t.ports,
  readme: t.readme,
  earned: 0,
  runtimeInMin: 0,
});

/** The v1 fields common to create and update, in TemplateInput names. */
function common(b: Partial<Static<typeof CreateBody>>): TemplatePatch {
  return {
    ...(b.name !== undefined ? { name: b.name } : {}),
    ...(b.imageName !== undefined ? { imageName: b.imageName } : {}),
    ...(b.category !== undefined ? { category: b.category } : {}),
    ...(b.containerDiskInGb !== undefined ? { containerDiskInGb: b.containerDiskInGb } : {}),
    ...(b.volumeInGb !== undefined ? { volumeInGb: b.volumeInGb } : {}),
    ...(b.volumeMountPath !== undefined ? { volumeMountPath: b.volumeMountPath } : {}),
    ...(b.containerRegistryAuthId !== undefined
      ? { containerRegistryAuthId: b.containerRegistryAuthId === '' ? null : b.containerRegistryAuthId }
      : {}),
    ...(b.env !== undefined ? { env: b.env } : {}),
    ...(b.isPublic !== undefined ? { isPublic: b.isPublic } : {}),
    ...(b.ports !== undefined ? { ports: b.ports } : {}),
    ...(b.readme !== undefined ? { readme: b.readme } : {}),
  };
}

export function templateV1Routes(app: TypedApp, { templates }: TransportServices): void {
  app.post(
    '/templates',
    {
      schema: {
        tags,
        operationId: 'CreateTemplate',
        summary: 'Create a template',
        body: CreateBody,
        response: { 200: TemplateSchema, ...errorResponses },
      },
    },
    async (request) => {
      const b = request.body;
      const serverless = b.isServerless === true;
      const input: TemplateInput = {
        containerDiskInGb: 50,
        ...(serverless ? {} : { volumeInGb: 20, volumeMountPath: '/workspace', ports: ['8888/http', '22/tcp'] }),
        ...(common(b) as TemplateInput),
        ...(b.dockerEntrypoint !== undefined || b.dockerStartCmd !== undefined
          ? { args: argsOf(b.dockerEntrypoint ?? [], b.dockerStartCmd ?? []) }
          : {}),
        isServerless: serverless,
      };
      return templateV1View(await templates.create(principalOf(request).accountId, input));
    },
  );

  app.get(
    '/templates',
    {
      schema: {
        tags,
        operationId: 'ListTemplates',
        summary: 'List your templates (a bare array); the catalog ones too with includePublicTemplates',
        querystring: Includes,
        response: { 200: Type.Array(TemplateSchema), ...errorResponses },
      },
    },
    async (request) => {
      const q = request.query;
      const includePublic = q.includePublicTemplates === true || q.includeRunpodTemplates === true;
      return (await templates.list(principalOf(request).accountId, { includePublic })).map(templateV1View);
    },
  );

  app.get(
    '/templates/:templateId',
    {
      schema: {
        tags,
        operationId: 'GetTemplate',
        summary: 'Read one of your templates or a catalog one',
        params: Params,
        querystring: Includes,
        response: { 200: TemplateSchema, ...errorResponses },
      },
    },
    async (request) => templateV1View(await templates.get(principalOf(request).accountId, request.params.templateId)),
  );

  for (const [method, url, operationId] of [
    ['PATCH', '/templates/:templateId', 'UpdateTemplate'],
    ['POST', '/templates/:templateId/update', 'UpdateTemplatePost'],
  ] as const)
    app.route({
      method,
      url,
      schema: {
        tags,
        operationId,
        summary: 'Change one of your templates',
        params: Params,
        body: UpdateBody,
        response: { 200: TemplateSchema, ...errorResponses },
      },
      handler: async (request) => {
        const accountId = principalOf(request).accountId;
        const id = request.params.templateId;
        const patch = common(request.body);
        // dockerStartCmd alone keeps the template's entrypoint, and dockerEntrypoint alone its command.
        const args = await updatedArgs(async () => (await templates.get(accountId, id)).args, request.body);
        if (args !== undefined) patch.args = args;
        return templateV1View(await templates.update(accountId, id, patch));
      },
    });

  app.delete(
    '/templates/:templateId',
    {
      schema: {
        tags,
        operationId: 'DeleteTemplate',
        summary: 'Delete one of your templates',
        params: Params,
        response: { 204: Deleted, ...errorResponses },
      },
    },
    async (request, reply) => {
      await templates.delete(principalOf(request).accountId, request.params.templateId);
      return reply.code(204).send();
    },
  );
}
