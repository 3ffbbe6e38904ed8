/**
 * REST v1 pod schemas (`/v1/pods`): the bodies runpodctl sends, the v1 Pod answer, the list and
 * read queries, and v1's desiredStatus. The routes are in pods.ts.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { PodView } from '../../../pods/pod-view.js';
import { MAX_DISK_GB } from '../../../domain/limits.js';
import { MAX_START_COMMAND_CHARS } from '../../../domain/start-command.js';
import { Nullable } from '../../schemas.js';
import { closed, Entrypoint, Env, StartCmd, StringArray } from './common.js';

const Port = Type.String({ pattern: '^[0-9]{1,5}/[a-z]+$', description: '`<port>/<protocol>`' });
const Ports = Type.Array(Port, { maxItems: 64, description: 'default ["8888/http", "22/tcp"]' });
const Disk = (description: string) => Type.Integer({ minimum: 1, maximum: MAX_DISK_GB, description });
const VolumeSize = Type.Integer({
  minimum: 0,
  maximum: MAX_DISK_GB,
  description: 'pod volume, GB: 0 (none) or at least 10; default 20 on GPU pods without a network volume',
});
const Ignored = (description: string) => ({ description: `Accepted and ignored: ${description}` });

export const CreatePodBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 191, default: 'my pod' })),
    imageName: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'required unless templateId' })),
    templateId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    computeType: Type.Optional(Type.Unsafe<'GPU' | 'CPU'>({ type: 'string', enum: ['GPU', 'CPU'], default: 'GPU' })),
    gpuTypeIds: Type.Optional(StringArray('GPU types in order of preference; the first with capacity is used')),
    gpuTypePriority: Type.Optional(Type.String(Ignored('the order of gpuTypeIds is the priority'))),
    gpuCount: Type.Optional(Type.Integer({ minimum: 1, default: 1 })),
    cpuFlavorIds: Type.Optional(StringArray('CPU flavors in order of preference (computeType CPU)')),
    cpuFlavorPriority: Type.Optional(Type.String(Ignored('the order of cpuFlavorIds is the priority'))),
    vcpuCount: Type.Optional(Type.Integer({ minimum: 2, default: 2, description: 'vCPUs of a CPU pod' })),
    cloudType: Type.Optional(Type.Unsafe<'SECURE' | 'COMMUNITY'>({ type: 'string', enum: ['SECURE', 'COMMUNITY'] })),
    dataCenterIds: Type.Optional(StringArray('data centers the pod may run in; default any')),
    dataCenterPriority: Type.Optional(Type.String(Ignored('placement chooses'))),
    countryCodes: Type.Optional(StringArray('accepted and ignored')),
    allowedCudaVersions: Type.Optional(StringArray('host CUDA versions', Type.String({ pattern: '^\\d+\\.\\d+$' }))),
    minCudaVersion: Type.Optional(
      Type.String({ pattern: '^\\d+(\\.\\d+)?$', description: 'Gantry extension (runpodctl sends it)' }),
    ),
    containerDiskInGb: Type.Optional(Disk("container disk, GB; default 50 (a template's own without imageName)")),
    volumeInGb: Type.Optional(VolumeSize),
    volumeMountPath: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, default: '/workspace' })),
    networkVolumeId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    ports: Type.Optional(Ports),
    env: Type.Optional(Env),
    containerRegistryAuthId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    dockerEntrypoint: Type.Optional(Entrypoint),
    dockerStartCmd: Type.Optional(StartCmd),
    dockerArgs: Type.Optional(
      Type.String({
        maxLength: MAX_START_COMMAND_CHARS,
        description:
          'Gantry extension (runpodctl sends it): the start command as text, shell words or {"cmd": [...], "entrypoint": [...]}; not with a non-empty dockerEntrypoint',
      }),
    ),
    globalNetworking: Type.Optional(Type.Boolean({ default: false })),
    supportPublicIp: Type.Optional(Type.Boolean(Ignored('ports are published on the host address'))),
    interruptible: Type.Optional(
      Type.Boolean({
        default: false,
        description:
          "an interruptible (spot) GPU pod, bidding its GPU type's floor per GPU: placement may take its machine back for an on-demand pod or a higher bid (docs/pods.md)",
      }),
    ),
    locked: Type.Optional(Type.Boolean({ default: false })),
    minRAMPerGPU: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 4096,
        description:
          "GPU pods: the least GB of memory per GPU; the pod gets its GPU type's allotment, at least this, on a host whose share of its GPUs has it",
      }),
    ),
    minVCPUPerGPU: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 512,
        description:
          "GPU pods: the least vCPUs per GPU; the pod gets its GPU type's allotment, at least this, on a host whose share of its GPUs has it",
      }),
    ),
    minDiskBandwidthMBps: Type.Optional(Type.Number(Ignored('placement chooses'))),
    minDownloadMbps: Type.Optional(Type.Number(Ignored('placement chooses'))),
    minUploadMbps: Type.Optional(Type.Number(Ignored('placement chooses'))),
    stopAfter: Type.Optional(
      Type.String({ format: 'date-time', maxLength: 64, description: 'Gantry extension: the pod stops itself then' }),
    ),
    terminateAfter: Type.Optional(
      Type.String({
        format: 'date-time',
        maxLength: 64,
        description: 'Gantry extension: the pod terminates itself then',
      }),
    ),
  },
  closed,
);

export const UpdatePodBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 191 })),
    imageName: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    containerDiskInGb: Type.Optional(Disk('container disk, GB')),
    volumeInGb: Type.Optional(VolumeSize),
    volumeMountPath: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    ports: Type.Optional(Ports),
    env: Type.Optional(Env),
    containerRegistryAuthId: Type.Optional(Type.String({ maxLength: 64, description: '"" removes the credential' })),
    dockerEntrypoint: Type.Optional(Entrypoint),
    dockerStartCmd: Type.Optional(StartCmd),
    globalNetworking: Type.Optional(Type.Boolean({ description: 'only its current value: set at creation' })),
    locked: Type.Optional(Type.Boolean()),
  },
  { ...closed, description: 'Only the fields sent change. Changes the instance sees restart a running pod.' },
);

const NetworkVolumeView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  size: Type.Integer(),
  dataCenterId: Type.String(),
});

export const PodSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  desiredStatus: Type.Unsafe<string>({ type: 'string', enum: ['RUNNING', 'EXITED', 'TERMINATED'] }),
  image: Type.String(),
  imageName: Type.String({ description: 'Gantry extension: the same as image (runpodctl reads imageName)' }),
  templateId: Type.Optional(Type.String()),
  containerRegistryAuthId: Type.Optional(Type.String()),
  containerDiskInGb: Type.Integer(),
  volumeInGb: Type.Integer(),
  volumeMountPath: Type.Optional(Type.String()),
  networkVolumeId: Type.Optional(Type.String({ description: 'Gantry extension' })),
  networkVolume: Type.Optional(NetworkVolumeView),
  dockerEntrypoint: Type.Array(Type.String()),
  dockerStartCmd: Type.Array(Type.String()),
  env: Type.Record(Type.String(), Type.String()),
  ports: Type.Array(Type.String()),
  portMappings: Type.Record(Type.String(), Type.Integer()),
  publicIp: Type.Optional(Type.String()),
  gpu: Type.Optional(Type.Object({ id: Type.String(), count: Type.Integer(), displayName: Type.String() })),
  gpuCount: Type.Integer({ description: 'runpodctl reads it' }),
  cpuFlavorId: Type.Optional(Type.String()),
  vcpuCount: Type.Optional(Type.Number()),
  memoryInGb: Type.Optional(Type.Number()),
  machine: Type.Optional(
    Type.Object({
      dataCenterId: Type.Optional(Type.String()),
      gpuTypeId: Type.Optional(Type.String()),
      secureCloud: Type.Boolean(),
    }),
  ),
  costPerHr: Type.Number(),
  adjustedCostPerHr: Type.Number(),
  interruptible: Type.Boolean(),
  locked: Type.Boolean(),
  lastStartedAt: Type.Optional(Type.String()),
  createdAt: Type.String({ description: 'Gantry extension' }),
  status: Type.String({ description: 'Gantry extension: the /v2 status (PROVISIONING ... TERMINATED)' }),
  consumerUserId: Type.String({ description: 'the account that owns the pod' }),
  machineId: Nullable(Type.String({ description: 'the fleet host the pod is placed on (GET /v2/hosts)' })),
  lastStatusChange: Type.String({
    format: 'date-time',
    description: 'when the pod last changed status (the platform answers a sentence; Gantry the time)',
  }),
  endpointId: Nullable(Type.String({ description: 'always null: serverless workers are not pods in Gantry' })),
  aiApiId: Nullable(Type.String({ description: 'always null: Gantry has no AI API pods' })),
  slsVersion: Type.Integer({ description: 'always 0: only serverless workers have a version' }),
  savingsPlans: Type.Array(Type.Object({}), {
    maxItems: 0,
    description: 'always []: Gantry has no savings plans',
  }),
  volumeEncrypted: Type.Boolean({ description: 'always false: Gantry does not encrypt pod volumes' }),
});
export type PodV1 = Static<typeof PodSchema>;

export const ListQuery = Type.Object({
  computeType: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: ['GPU', 'CPU'] })),
  cpuFlavorId: Type.Optional(Type.Array(Type.String())),
  dataCenterId: Type.Optional(Type.Array(Type.String())),
  desiredStatus: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: ['RUNNING', 'EXITED', 'TERMINATED'] })),
  endpointId: Type.Optional(Type.String()),
  gpuTypeId: Type.Optional(Type.Array(Type.String())),
  id: Type.Optional(Type.String()),
  imageName: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
  networkVolumeId: Type.Optional(Type.String()),
  templateId: Type.Optional(Type.String()),
  includeMachine: Type.Optional(Type.Boolean({ default: false })),
  includeNetworkVolume: Type.Optional(Type.Boolean({ default: false })),
  includeSavingsPlans: Type.Optional(Type.Boolean({ default: false })),
  includeTemplate: Type.Optional(Type.Boolean({ default: false })),
  includeWorkers: Type.Optional(Type.Boolean({ default: false })),
});
export const GetQuery = Type.Object({
  includeMachine: Type.Optional(Type.Boolean({ default: false })),
  includeNetworkVolume: Type.Optional(Type.Boolean({ default: false })),
  includeSavingsPlans: Type.Optional(Type.Boolean({ default: false })),
  includeTemplate: Type.Optional(Type.Boolean({ default: false })),
  includeWorkers: Type.Optional(Type.Boolean({ default: false })),
});
export type Includes = Static<typeof GetQuery>;

/** v1 desiredStatus from the /v2 status. */
export const desiredStatusOf = (p: PodView): string =>
  p.status === 'TERMINATED' ? 'TERMINATED' : p.status === 'EXITED' || p.status === 'ERROR' ? 'EXITED' : 'RUNNING';
