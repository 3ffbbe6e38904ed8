/** REST v1 pods (`/v1/pods`): v1 names and shapes over PodsService. */
import type { TypedApp } from '../../type-provider.js';
import { Type, type Static } from '@sinclair/typebox';
import { ApiError } from '../../../domain/errors.js';
import type { PodView } from '../../../pods/pod-view.js';
import type { CreatePodInput, PatchPodInput } from '../../../pods/pod-rules.js';
import type { TransportServices } from '../../../transport/services.js';
import { principalOf } from '../../plugins/auth.js';
import { argsOf, Deleted, errorResponses, IdParam, refuseUnsupported, updatedArgs, v1StartOf } from './common.js';
import {
  CreatePodBody,
  desiredStatusOf,
  GetQuery,
  type Includes,
  ListQuery,
  PodSchema,
  type PodV1,
  UpdatePodBody,
} from './pod-schemas.js';

const tags = ['pods'];
const Params = IdParam('podId');
type Params = Static<typeof Params>;

export function podV1Routes(app: TypedApp, { pods, volumes, catalog }: TransportServices): void {
  const gpuName = (id: string): string => {
    try {
      return catalog.getGpuType(id, { availability: false }).displayName;
    } catch {
      return id;
    }
  };

  async function view(accountId: string, p: PodView, include: Includes = {}): Promise<PodV1> {
    const network = p.mounts.network?.[0];
    const portMappings: Record<string, number> = {};
    let publicIp: string | undefined;
    for (const m of p.runtime?.ports ?? []) {
      if (m.public !== null) portMappings[String(m.private)] = m.public;
      if (m.ip && publicIp === undefined) publicIp = m.ip;
    }
    const out: PodV1 = {
      id: p.id,
      name: p.name,
      desiredStatus: desiredStatusOf(p),
      image: p.image,
      imageName: p.image,
      ...(p.template !== null ? { templateId: p.template } : {}),
      ...(p.registry !== null ? { containerRegistryAuthId: p.registry } : {}),
      containerDiskInGb: p.disk,
      volumeInGb: p.mounts.persistent?.size ?? 0,
      ...((p.mounts.persistent?.path ?? network?.path)
        ? { volumeMountPath: p.mounts.persistent?.path ?? network!.path }
        : {}),
      ...(network ? { networkVolumeId: network.volumeId } : {}),
      ...v1StartOf(p.args),
      env: p.env,
      ports: p.ports,
      portMappings,
      ...(publicIp !== undefined ? { publicIp } : {}),
      ...(p.gpu ? { gpu: { id: p.gpu.id, count: p.gpu.count, displayName: gpuName(p.gpu.id) } } : {}),
      gpuCount: p.gpu?.count ?? 0,
      ...(p.cpu ? { cpuFlavorId: p.cpu.id } : {}),
      ...(p.vcpuCount !== null ? { vcpuCount: p.vcpuCount } : {}),
      ...(p.memoryInGb !== null ? { memoryInGb: p.memoryInGb } : {}),
      costPerHr: p.cost,
      adjustedCostPerHr: p.cost,
      interruptible: p.interruptible === true,
      locked: p.locked,
      ...(p.startedAt !== null ? { lastStartedAt: p.startedAt } : {}),
      createdAt: p.createdAt,
      status: p.status,
      consumerUserId: accountId,
      machineId: p.hostId,
      lastStatusChange: p.statusChangedAt,
      endpointId: null,
      aiApiId: null,
      slsVersion: 0,
      savingsPlans: [],
      volumeEncrypted: false,
    };
    if (include.includeMachine)
      out.machine = {
        ...(p.dataCenterId !== null ? { dataCenterId: p.dataCenterId } : {}),
        ...(p.gpu ? { gpuTypeId: p.gpu.id } : {}),
        secureCloud: p.cloud === 'SECURE',
      };
    if (include.includeNetworkVolume && network) {
      const v = await volumes.get(accountId, network.volumeId);
      out.networkVolume = { id: v.id, name: v.name, size: v.size, dataCenterId: v.dataCenterId };
    }
    return out;
  }

  /** v1 create → /v2 create input; the GPU or CPU choice is filled in per candidate. */
  function createInput(b: Static<typeof CreatePodBody>): Omit<CreatePodInput, 'gpu' | 'cpu'> {
    const fromTemplate = b.templateId !== undefined && b.imageName === undefined;
    const isCpu = b.computeType === 'CPU';
    const path = b.volumeMountPath ?? '/workspace';
    const volumeInGb = b.volumeInGb ?? (fromTemplate || isCpu || b.networkVolumeId !== undefined ? undefined : 20);
    const args = startCommand(b);
    return {
      name: b.name ?? 'my pod',
      ...(b.imageName !== undefined ? { image: b.imageName } : {}),
      ...(b.templateId !== undefined ? { templateId: b.templateId } : {}),
      ...(args !== undefined && args !== '' ? { args } : {}),
      ...(b.containerDiskInGb !== undefined ? { disk: b.containerDiskInGb } : fromTemplate ? {} : { disk: 50 }),
      ...(b.ports !== undefined ? { ports: b.ports } : fromTemplate ? {} : { ports: ['8888/http', '22/tcp'] }),
      ...(b.env !== undefined ? { env: b.env } : {}),
      ...(b.containerRegistryAuthId !== undefined ? { registry: b.containerRegistryAuthId } : {}),
      ...(b.networkVolumeId !== undefined
        ? { mounts: { network: [{ volumeId: b.networkVolumeId, path }] } }
        : volumeInGb !== undefined && volumeInGb > 0
          ? { mounts: { persistent: { size: volumeInGb, path } } }
          : {}),
      ...(b.cloudType !== undefined ? { cloud: b.cloudType } : {}),
      ...(b.dataCenterIds !== undefined ? { dataCenterIds: b.dataCenterIds } : {}),
      ...(b.allowedCudaVersions !== undefined ? { allowedCudaVersions: b.allowedCudaVersions } : {}),
      ...(b.minCudaVersion !== undefined ? { minCudaVersion: b.minCudaVersion } : {}),
      ...(b.globalNetworking !== undefined ? { globalNetworking: b.globalNetworking } : {}),
      // v1 sends no bid: an interruptible pod bids its GPU type's floor (docs/pods.md)
      ...(b.interruptible === true ? { interruptible: true } : {}),
      // v1's minimums are per GPU: a GPU pod gets at least that many per GPU (docs/catalog.md)
      ...(!isCpu && b.minVCPUPerGPU ? { minVcpuCount: b.minVCPUPerGPU * (b.gpuCount ?? 1) } : {}),
      ...(!isCpu && b.minRAMPerGPU ? { minMemoryInGb: b.minRAMPerGPU * (b.gpuCount ?? 1) } : {}),
      ...(b.stopAfter !== undefined ? { stopAfter: b.stopAfter } : {}),
      ...(b.terminateAfter !== undefined ? { terminateAfter: b.terminateAfter } : {}),
    };
  }

  /**
   * The start command of a create: an entrypoint with dockerStartCmd as its command (the override),
   * else dockerStartCmd as words, else dockerArgs as given (either form).
   */
  function startCommand(b: Static<typeof CreatePodBody>): string | undefined {
    const entrypoint = b.dockerEntrypoint ?? [];
    if (entrypoint.length > 0 && b.dockerArgs !== undefined && b.dockerArgs !== '')
      throw new ApiError(
        'BAD_REQUEST',
        'Send the command as dockerStartCmd with dockerEntrypoint, or the whole start command as dockerArgs ({"cmd": [...], "entrypoint": [...]}), not both.',
      );
    if (entrypoint.length > 0 || (b.dockerStartCmd !== undefined && b.dockerStartCmd.length > 0))
      return argsOf(entrypoint, b.dockerStartCmd ?? []);
    return b.dockerArgs;
  }

  async function create(accountId: string, b: Static<typeof CreatePodBody>): Promise<PodView> {
    const base = createInput(b);
    const candidates: Array<Pick<CreatePodInput, 'gpu' | 'cpu'>> =
      b.computeType === 'CPU'
        ? (b.cpuFlavorIds ?? []).map((id) => ({ cpu: { id, vcpuCount: b.vcpuCount ?? 2 } }))
        : (b.gpuTypeIds ?? []).map((id) => ({ gpu: { id, count: b.gpuCount ?? 1 } }));
    if (candidates.length === 0)
      throw new ApiError(
        'BAD_REQUEST',
        b.computeType === 'CPU'
          ? 'cpuFlavorIds: name at least one CPU flavor for a CPU pod (GET /v2/catalog/cpus).'
          : 'gpuTypeIds: name at least one GPU type for a GPU pod (GET /v2/catalog/gpus).',
      );
    // The first candidate with capacity wins, as v1's gpuTypeIds / cpuFlavorIds promise.
    for (let i = 0; ; i++) {
      try {
        return await pods.create(accountId, { ...base, ...candidates[i] });
      } catch (err) {
        if (!(err instanceof ApiError) || err.code !== 'NO_CAPACITY' || i === candidates.length - 1) throw err;
      }
    }
  }

  async function updateInput(accountId: string, id: string, b: Static<typeof UpdatePodBody>): Promise<PatchPodInput> {
    const patch: PatchPodInput = {
      ...(b.name !== undefined ? { name: b.name } : {}),
      ...(b.imageName !== undefined ? { image: b.imageName } : {}),
      ...(b.containerDiskInGb !== undefined ? { disk: b.containerDiskInGb } : {}),
      ...(b.ports !== undefined ? { ports: b.ports } : {}),
      ...(b.env !== undefined ? { env: b.env } : {}),
      ...(b.containerRegistryAuthId !== undefined
        ? { registry: b.containerRegistryAuthId === '' ? null : b.containerRegistryAuthId }
        : {}),
      ...(b.locked !== undefined ? { locked: b.locked } : {}),
    };
    const args = await updatedArgs(async () => (await pods.get(accountId, id)).args, b);
    if (args !== undefined) patch.args = args;
    if (b.volumeInGb !== undefined || b.volumeMountPath !== undefined || b.globalNetworking !== undefined) {
      const current = await pods.get(accountId, id);
      refuseUnsupported(
        'globalNetworking',
        b.globalNetworking,
        current.globalNetworking.enabled,
        'global networking is chosen when the pod is created',
      );
      const network = current.mounts.network?.[0];
      if (network && b.volumeMountPath !== undefined)
        patch.mounts = { network: [{ volumeId: network.volumeId, path: b.volumeMountPath }] };
      else if (!network && (b.volumeInGb !== undefined || b.volumeMountPath !== undefined)) {
        const size = b.volumeInGb ?? current.mounts.persistent?.size ?? 20;
        const path = b.volumeMountPath ?? current.mounts.persistent?.path ?? '/workspace';
        patch.mounts = size > 0 ? { persistent: { size, path } } : {};
      }
    }
    return patch;
  }

  app.post(
    '/pods',
    {
      schema: {
        tags,
        operationId: 'CreatePod',
        summary: 'Create a pod',
        description:
          'Answers 201 with the pod, which starts asynchronously. The first of gpuTypeIds (cpuFlavorIds) with capacity is used.',
        body: CreatePodBody,
        response: { 201: PodSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const accountId = principalOf(request).accountId;
      const body = request.body;
      let pod = await create(accountId, body);
      if (body.locked === true) pod = await pods.update(accountId, pod.id, { locked: true });
      return reply.code(201).send(await view(accountId, pod));
    },
  );

  app.get(
    '/pods',
    {
      schema: {
        tags,
        operationId: 'ListPods',
        summary: 'List your pods (a bare array)',
        description: 'Terminated pods are left out. List filters that repeat (gpuTypeId=a&gpuTypeId=b) match any.',
        querystring: ListQuery,
        response: { 200: Type.Array(PodSchema), ...errorResponses },
      },
    },
    async (request) => {
      const accountId = principalOf(request).accountId;
      const q = request.query;
      const all = await pods.list(accountId, { includeTerminated: q.desiredStatus === 'TERMINATED' });
      const any = <T>(values: T[] | undefined, v: T | undefined): boolean =>
        values === undefined || (v !== undefined && values.includes(v));
      const chosen = all.filter(
        (p) =>
          (q.computeType === undefined || (q.computeType === 'CPU') === (p.cpu !== undefined)) &&
          any(q.cpuFlavorId, p.cpu?.id) &&
          any(q.gpuTypeId, p.gpu?.id) &&
          any(q.dataCenterId, p.dataCenterId ?? undefined) &&
          (q.desiredStatus === undefined || desiredStatusOf(p) === q.desiredStatus) &&
          q.endpointId === undefined &&
          (q.id === undefined || p.id === q.id) &&
          (q.imageName === undefined || p.image === q.imageName) &&
          (q.name === undefined || p.name === q.name) &&
          (q.networkVolumeId === undefined || p.mounts.network?.[0]?.volumeId === q.networkVolumeId) &&
          (q.templateId === undefined || p.template === q.templateId),
      );
      return Promise.all(chosen.map((p) => view(accountId, p, q)));
    },
  );

  app.get(
    '/pods/:podId',
    {
      schema: {
        tags,
        operationId: 'GetPod',
        summary: 'Read one pod',
        params: Params,
        querystring: GetQuery,
        response: { 200: PodSchema, ...errorResponses },
      },
    },
    async (request) => {
      const accountId = principalOf(request).accountId;
      const pod = await pods.get(accountId, request.params.podId);
      return view(accountId, pod, request.query);
    },
  );

  const update = async (request: { params: Params; body: Static<typeof UpdatePodBody> }, accountId: string) => {
    const id = request.params.podId;
    const patch = await updateInput(accountId, id, request.body);
    return view(accountId, await pods.update(accountId, id, patch));
  };
  for (const [method, url, operationId] of [
    ['PATCH', '/pods/:podId', 'UpdatePod'],
    ['POST', '/pods/:podId/update', 'UpdatePodPost'],
  ] as const)
    app.route({
      method,
      url,
      schema: {
        tags,
        operationId,
        summary: 'Change a pod',
        params: Params,
        body: UpdatePodBody,
        response: { 200: PodSchema, ...errorResponses },
      },
      handler: async (request) => update(request, principalOf(request).accountId),
    });

  for (const [action, operationId, summary] of [
    ['start', 'StartPod', 'Start a stopped pod'],
    ['stop', 'StopPod', 'Stop a running pod'],
    ['restart', 'RestartPod', 'Restart a pod'],
    ['reset', 'ResetPod', 'Reset a pod: Gantry restarts it on a fresh container'],
  ] as const)
    app.post(
      `/pods/:podId/${action}`,
      {
        schema: {
          tags,
          operationId,
          summary,
          description:
            'Answers 200 with the pod. An action its status does not allow, or stop/restart of a locked pod, answers 409.',
          params: Params,
          response: { 200: PodSchema, ...errorResponses },
        },
      },
      async (request) => {
        const accountId = principalOf(request).accountId;
        const pod = await pods.act(accountId, request.params.podId, action === 'reset' ? 'restart' : action);
        return view(accountId, pod);
      },
    );

  app.delete(
    '/pods/:podId',
    {
      schema: {
        tags,
        operationId: 'DeletePod',
        summary: 'Terminate a pod',
        params: Params,
        response: { 204: Deleted, ...errorResponses },
      },
    },
    async (request, reply) => {
      await pods.act(principalOf(request).accountId, request.params.podId, 'terminate');
      return reply.code(204).send();
    },
  );
}
