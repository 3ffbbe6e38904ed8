import type { Template } from '../domain/template.js';
import type { PatchPodInput, TemplateDefaults } from './pod-rules.js';

/** What a template gives a pod: the defaults of a create, or the fields of a PATCH naming it. */
export const templateDefaults = (t: Template): TemplateDefaults => ({
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

/**
 * A PATCH with `templateId` applies the template's image, args, disk, ports, registry and env as
 * if they were body fields; explicit body fields win. Its env is merged over the pod's env unless
 * the body sends `env` (a full replacement, merged over the template's).
 */
export function effectivePatch(
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
