/**
 * Cluster request and response schemas (REST /v2/clusters, spec 2.7, docs/clusters.md). Requests
 * forbid unknown properties; responses list every field (the serializer drops anything undeclared).
 */
import { Type, type Static } from '@sinclair/typebox';
import { CLUSTER_TYPES } from '../../domain/cluster.js';
import { MAX_DISK_GB } from '../../domain/limits.js';
import { POD_STATUSES } from '../../domain/pod-state.js';
import type { ClusterView, CreateClusterInput } from '../../clusters/clusters-service.js';
import { StringEnum } from '../schemas.js';
import { StartCommandText } from './pod-schemas.js';

const closed = { additionalProperties: false } as const;

const ClusterType = StringEnum(CLUSTER_TYPES, {
  description:
    'TRAINING: distributed training; SLURM: controller (rank 0) and compute nodes; RAY: head (rank 0) and workers; APPLICATION: a general multi-node application.',
});

const ClusterCompute = Type.Object(
  {
    gpuTypeId: Type.String({ minLength: 1, description: 'GPU type of every pod (GET /v2/catalog/gpus)' }),
    gpuCountPerPod: Type.Integer({ minimum: 1, description: 'GPUs on each pod' }),
    podCount: Type.Integer({ minimum: 2, maximum: 250, description: 'Number of pods (nodes)' }),
  },
  { ...closed, description: 'The homogeneous shape: podCount pods of gpuCountPerPod GPUs of gpuTypeId.' },
);

const PersistentMount = Type.Object(
  { size: Type.Integer({ minimum: 10, maximum: MAX_DISK_GB }), path: Type.String({ minLength: 1, maxLength: 1024 }) },
  closed,
);
const NetworkMount = Type.Object(
  { volumeId: Type.String({ minLength: 1, maxLength: 64 }), path: Type.String({ minLength: 1, maxLength: 1024 }) },
  closed,
);

export const CreateClusterRequest = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 180 }),
    type: ClusterType,
    compute: ClusterCompute,
    image: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1024, description: 'Docker image reference (required)' }),
    ),
    args: Type.Optional(StartCommandText),
    disk: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_DISK_GB, description: 'container disk per pod, GB' })),
    env: Type.Optional(Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.String({ maxLength: 32768 }))),
    ports: Type.Optional(Type.Array(Type.String({ pattern: '^[0-9]{1,5}/[a-z]+$' }), { maxItems: 64 })),
    dataCenterIds: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        maxItems: 64,
        description: 'Preferred data centers; the cluster is always placed within one.',
      }),
    ),
    mounts: Type.Optional(
      Type.Object(
        {
          persistent: Type.Optional(PersistentMount),
          network: Type.Optional(Type.Array(NetworkMount, { maxItems: 1 })),
        },
        closed,
      ),
    ),
    startJupyter: Type.Optional(Type.Boolean({ default: false })),
    startSsh: Type.Optional(Type.Boolean({ default: false })),
  },
  {
    ...closed,
    description:
      'The container configuration applies to every pod. No `registry`: private registries are not supported for clusters.',
  },
);

export const UpdateClusterRequest = Type.Object(
  { name: Type.Optional(Type.String({ minLength: 1, maxLength: 180 })) },
  { ...closed, minProperties: 1, description: 'A rename: only the name can change.' },
);

export const Cluster = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: ClusterType,
  compute: ClusterCompute,
  template: Type.Optional(
    Type.String({
      description:
        'ID of the template the pods were created from; always omitted (the create body has no templateId: a template is spread into it)',
    }),
  ),
  dataCenterId: Type.Optional(Type.String({ description: 'omitted until a pod is placed' })),
  pods: Type.Object({
    total: Type.Integer(),
    byStatus: Type.Record(Type.String(), Type.Integer(), {
      description: 'Member pod counts by status; statuses with no pods are omitted.',
    }),
  }),
  network: Type.Optional(Type.Object({ cidr: Type.String({ description: "The cluster's private overlay network" }) })),
  primary: Type.Optional(
    Type.Object({
      podId: Type.String(),
      status: StringEnum(POD_STATUSES),
      sshEndpoint: Type.Optional(Type.String({ description: '`host:port`, once the primary RUNNING exposes 22/tcp' })),
    }),
  ),
  createdAt: Type.String({ format: 'date-time' }),
});

export const ClusterList = Type.Object({ clusters: Type.Array(Cluster) });

// The schemas and the service types must describe the same shapes.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const assertTrue = <T extends true>(): T => true as T;
assertTrue<Same<Static<typeof CreateClusterRequest>, CreateClusterInput>>();
const _viewFits = (v: ClusterView): Static<typeof Cluster> => v;
void _viewFits;
