import { ApiError, validationFailed } from '../domain/errors.js';
import { splitList } from '../serverless/endpoint-settings.js';
import type { Template } from '../domain/template.js';
import type { TemplateInput } from '../templates/templates-service.js';
import { envFromPairs, envToPairs, type GraphqlContext } from './context.js';
import type { ResolverMap } from './schema.js';

/**
 * A template in the GraphQL shape: `dockerArgs`, ports as a comma list, env as `[{key, value}]`.
 * Another account's public template does not name its registry credential.
 */
export const toGqlTemplate = (t: Template, viewerAccountId: string) => ({
  id: t.id,
  name: t.name,
  imageName: t.imageName,
  dockerArgs: t.args,
  containerDiskInGb: t.containerDiskInGb,
  volumeInGb: t.volumeInGb,
  volumeMountPath: t.volumeMountPath,
  ports: t.ports.join(','),
  env: envToPairs(t.env),
  isServerless: t.isServerless,
  readme: t.readme,
  containerRegistryAuthId: t.accountId === viewerAccountId ? t.containerRegistryAuthId : null,
  startSsh: t.startSsh,
  startJupyter: t.startJupyter,
  startScript: null,
  advancedStart: false,
  isPublic: t.isPublic,
  isRunpod: t.accountId === null,
  category: t.category,
  portsConfig: t.ports.map((p) => ({ port: p.split('/')[0], name: null })),
});

interface GqlTemplateInput {
  id?: string | null;
  name?: string | null;
  imageName?: string | null;
  dockerArgs?: string | null;
  containerDiskInGb?: number | null;
  volumeInGb?: number | null;
  volumeMountPath?: string | null;
  ports?: string | null;
  env?: Array<{ key: string; value?: string | null } | null> | null;
  isServerless?: boolean | null;
  readme?: string | null;
  containerRegistryAuthId?: string | null;
  startSsh?: boolean | null;
  startJupyter?: boolean | null;
  isPublic?: boolean | null;
  category?: string | null;
  startScript?: string | null;
  advancedStart?: boolean | null;
}

/**
 * GraphQL input → TemplatesService fields. Missing and null fields are left out (defaults on create,
 * unchanged on update); "" means none for containerRegistryAuthId and volumeMountPath, as
 * runpod-python and runpodctl send it.
 */
function toTemplateFields(input: GqlTemplateInput): Partial<TemplateInput> {
  const out: Partial<TemplateInput> = {};
  if (input.name != null) out.name = input.name;
  if (input.imageName != null) out.imageName = input.imageName;
  if (input.dockerArgs != null) out.args = input.dockerArgs;
  if (input.containerDiskInGb != null) out.containerDiskInGb = input.containerDiskInGb;
  if (input.volumeInGb != null) out.volumeInGb = input.volumeInGb;
  if (input.volumeMountPath != null)
    out.volumeMountPath = input.volumeMountPath.trim() === '' ? null : input.volumeMountPath;
  if (input.ports != null) out.ports = splitList(input.ports);
  if (input.env != null) out.env = envFromPairs(input.env);
  if (input.isServerless != null) out.isServerless = input.isServerless;
  if (input.readme != null) out.readme = input.readme;
  if (input.containerRegistryAuthId != null)
    out.containerRegistryAuthId = input.containerRegistryAuthId.trim() === '' ? null : input.containerRegistryAuthId;
  if (input.startSsh != null) out.startSsh = input.startSsh;
  if (input.startJupyter != null) out.startJupyter = input.startJupyter;
  if (input.isPublic != null) out.isPublic = input.isPublic;
  if (input.category != null) {
    const category = input.category.toUpperCase();
    if (category !== 'NVIDIA' && category !== 'AMD' && category !== 'CPU')
      throw validationFailed([`category: "${input.category}" must be NVIDIA, AMD or CPU`]);
    out.category = category;
  }
  return out;
}

export const templateResolvers: ResolverMap<GraphqlContext> = {
  Mutation: {
    /**
     * Deletes the caller's own template of that name (SkyPilot names a cluster's docker-login
     * template and deletes it by name), by the rules of DELETE /v2/templates/{id}. Template names
     * need not be unique on Gantry: a name several of the caller's templates share is refused
     * rather than guessed. Answers null.
     */
    deleteTemplate: async (_root, args: { templateName: string }, { services, principal }: GraphqlContext) => {
      const named = (await services.templates.list(principal.accountId)).filter((t) => t.name === args.templateName);
      if (named.length === 0)
        throw new ApiError('NOT_FOUND', `No template named "${args.templateName}" exists for this account.`);
      if (named.length > 1)
        throw new ApiError(
          'BAD_REQUEST',
          `${named.length} of your templates are named "${args.templateName}" (${named.map((t) => `"${t.id}"`).join(', ')}); delete one by id with DELETE /v2/templates/{id}.`,
        );
      await services.templates.delete(principal.accountId, named[0]!.id);
      return null;
    },
    saveTemplate: async (_root, args: { input?: GqlTemplateInput | null }, { services, principal }: GraphqlContext) => {
      const input = args.input ?? {};
      const fields = toTemplateFields(input);
      const id = input.id?.trim();
      if (id)
        return toGqlTemplate(await services.templates.update(principal.accountId, id, fields), principal.accountId);
      const missing = [
        ...(fields.name ? [] : ['name: is required']),
        ...(fields.imageName ? [] : ['imageName: is required']),
      ];
      if (missing.length > 0) throw validationFailed(missing);
      return toGqlTemplate(
        await services.templates.create(principal.accountId, fields as TemplateInput),
        principal.accountId,
      );
    },
  },
  Query: {
    podTemplates: async (
      _root,
      args: { input?: PodTemplateFilter | null },
      { services, principal }: GraphqlContext,
    ) => {
      const { isRunpod, isPublic, isServerless, category } = args.input ?? {};
      if (isPublic === false) return [];
      return (await services.templates.listPublic())
        .filter(
          (t) =>
            (isRunpod == null || (t.accountId === null) === isRunpod) &&
            (isServerless == null || t.isServerless === isServerless) &&
            (category == null || t.category === category.toUpperCase()),
        )
        .map((t) => toGqlTemplate(t, principal.accountId));
    },
    podTemplate: async (_root, args: { id: string }, { services, principal }: GraphqlContext) =>
      toGqlTemplate(await services.templates.get(principal.accountId, args.id), principal.accountId),
  },
};

interface PodTemplateFilter {
  isRunpod?: boolean | null;
  isPublic?: boolean | null;
  isServerless?: boolean | null;
  category?: string | null;
}
