/**
 * Pod request and response schemas (spec 2.1-2.9). Request objects forbid unknown properties at
 * every level, so each unknown property is one `errors` entry of a 422. Response schemas list
 * every field: the serializer drops anything undeclared.
 */
import { Type, type Static } from '@sinclair/typebox';
import { POD_ACTIONS, POD_STATUSES } from '../../domain/pod-state.js';
import type { CreatePodInput, PatchPodInput } from '../../pods/pod-rules.js';
import type { PodView } from '../../pods/pod-view.js';
import { Nullable, StringEnum } from '../schemas.js';
import { MAX_DISK_GB } from '../../domain/limits.js';
import { MAX_START_COMMAND_CHARS } from '../../domain/start-command.js';
import { CLUSTER_ROLES } from '../../domain/cluster.js';
import { POD_OFFSET_MAX, POD_ORDERS, POD_PAGE_MAX, POD_SEARCH_MAX, POD_SORTS } from '../../pods/pod-listing.js';

const closed = { additionalProperties: false } as const;

const PortList = Type.Array(
  Type.String({ pattern: '^[0-9]{1,5}/[a-z]+$', description: '`<port>/<protocol>`, e.g. `8888/http` or `22/tcp`' }),
  {
    maxItems: 64,
  },
);
const Env = Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.String({ maxLength: 32768 }));
const Cloud = StringEnum(['SECURE', 'COMMUNITY'] as const);
/** `args`: shell words, or the override (domain/start-command.ts). */
export const StartCommandText = Type.String({
  maxLength: MAX_START_COMMAND_CHARS,
  description:
    'the start command: shell words (the image keeps its ENTRYPOINT), or {"cmd": [...], "entrypoint": [...]} to replace ENTRYPOINT and CMD word for word (docs/api.md "The start command")',
});

const PersistentMount = Type.Object(
  {
    size: Type.Integer({ minimum: 10, maximum: MAX_DISK_GB, description: 'GB' }),
    path: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  { ...closed, description: 'Host-local storage (deprecated; prefer a network volume). Not allowed on CPU pods.' },
);
const NetworkMount = Type.Object(
  { volumeId: Type.String({ minLength: 1, maxLength: 64 }), path: Type.String({ minLength: 1, maxLength: 1024 }) },
  { ...closed, description: 'A network volume of the caller, in the data center the pod runs in.' },
);
const Mounts = Type.Object(
  { persistent: Type.Optional(PersistentMount), network: Type.Optional(Type.Array(NetworkMount, { maxItems: 1 })) },
  { ...closed, description: 'At most one of persistent or network.' },
);
const cudaVersions = (description?: string) =>
  Type.Array(Type.String({ pattern: '^\\d+\\.\\d+$' }), { maxItems: 64, ...(description ? { description } : {}) });
const minCudaVersion = (description?: string) =>
  Type.String({ pattern: '^\\d+(\\.\\d+)?$', ...(description ? { description } : {}) });
const CudaVersions = cudaVersions();
const MinCudaVersion = minCudaVersion();
const CreateGpuConfig = Type.Object(
  {
    id: Type.String({ minLength: 1, description: 'GPU type id (GET /v2/catalog/gpus)' }),
    count: Type.Optional(Type.Integer({ minimum: 1, default: 1 })),
    minVcpuCountPerGpu: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 4096,
        description:
          'A placement filter: a host whose vCPUs per GPU are fewer is not chosen. The pod gets at least this many per GPU; what it gets is in gpu.vcpuCount.',
      }),
    ),
    minRamPerGpu: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 65536,
        description:
          'A placement filter: a host whose memory per GPU (GB) is less is not chosen. The pod gets at least this much per GPU; what it gets is in gpu.memory.',
      }),
    ),
    allowedCudaVersions: Type.Optional(
      cudaVersions(
        'Upstream v2 place of the top-level field (either place; both must agree). An empty list states no constraint and may go with minCudaVersion.',
      ),
    ),
    minCudaVersion: Type.Optional(
      minCudaVersion('Upstream v2 place of the top-level field (either place; both must agree).'),
    ),
  },
  closed,
);
const CreateCpuConfig = Type.Object(
  {
    id: Type.String({ minLength: 1, description: 'CPU flavor id (GET /v2/catalog/cpus)' }),
    vcpuCount: Type.Integer({ minimum: 2, description: "a power of two listed in the flavor's vcpuOptions" }),
  },
  closed,
);

export const CreatePodRequest = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 191 }),
    image: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1024, description: 'required unless templateId is set' }),
    ),
    args: Type.Optional(StartCommandText),
    disk: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_DISK_GB,
        description: 'container disk, GB; default: the template’s, else 20',
      }),
    ),
    ports: Type.Optional(PortList),
    env: Type.Optional(Env),
    registry: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Null()])),
    templateId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    mounts: Type.Optional(Mounts),
    gpu: Type.Optional(CreateGpuConfig),
    cpu: Type.Optional(CreateCpuConfig),
    cloud: Type.Optional(Cloud),
    dataCenterIds: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 64 })),
    allowedCudaVersions: Type.Optional(CudaVersions),
    minCudaVersion: Type.Optional(MinCudaVersion),
    globalNetworking: Type.Optional(Type.Boolean({ default: false })),
    startSsh: Type.Optional(Type.Boolean({ default: false })),
    startJupyter: Type.Optional(Type.Boolean({ default: false })),
    stopAfter: Type.Optional(
      Type.String({
        format: 'date-time',
        maxLength: 64,
        description: 'Gantry extension (runpodctl --stop-after): the pod stops itself at this time; in the future',
      }),
    ),
    terminateAfter: Type.Optional(
      Type.String({
        format: 'date-time',
        maxLength: 64,
        description: 'Gantry extension (runpodctl --terminate-after): the pod terminates itself at this time',
      }),
    ),
    interruptible: Type.Optional(
      Type.Boolean({
        default: false,
        description:
          'Gantry extension: an interruptible (spot) GPU pod, billed at its bid; placement may take its machine back for an on-demand pod or a higher bid (docs/pods.md "Interruptible pods").',
      }),
    ),
    bidPerGpu: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1000,
        description:
          "Gantry extension: an interruptible pod's bid, USD per GPU per hour; implies interruptible. Default: the GPU type's floor in the pod's cloud; below it answers 400 BID_TOO_LOW.",
      }),
    ),
  },
  { ...closed, description: 'Exactly one of gpu or cpu.' },
);

export const PatchPodRequest = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 191 })),
    image: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    args: Type.Optional(StartCommandText),
    disk: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_DISK_GB })),
    ports: Type.Optional(PortList),
    env: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.String({ maxLength: 32768 }), {
        description: 'replaces the env',
      }),
    ),
    registry: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Null()])),
    locked: Type.Optional(Type.Boolean()),
    globalNetworking: Type.Optional(
      Type.Boolean({
        description:
          "fixed at create: the pod's own value is accepted (a client may send back what it read); the other answers 400 GLOBAL_NETWORKING_FIXED",
      }),
    ),
    mounts: Type.Optional(Mounts),
    templateId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: "applies the template's image, args, disk, ports, env (merged) and registry",
      }),
    ),
  },
  { ...closed, description: 'Readable configuration. Changes the instance sees restart a RUNNING pod.' },
);

export const PodActionRequest = Type.Object({ action: Type.Union(POD_ACTIONS.map((a) => Type.Literal(a))) }, closed);

const SshEndpoint = Type.Object({
  host: Type.String(),
  port: Type.Integer(),
  username: Type.String(),
  command: Type.String(),
});

const PodRuntime = Type.Object({
  uptime: Type.Optional(Type.Integer()),
  gpus: Type.Optional(Type.Array(Type.Object({ util: Type.Integer(), memoryUtil: Type.Integer() }))),
  cpu: Type.Optional(Type.Object({ util: Type.Integer() })),
  memory: Type.Optional(Type.Object({ util: Type.Integer() })),
  ports: Type.Optional(
    Type.Array(
      Type.Object({
        private: Type.Integer(),
        public: Nullable(Type.Integer()),
        type: Type.String(),
        ip: Nullable(Type.String()),
      }),
    ),
  ),
});

const PodCluster = Type.Object(
  {
    id: Type.String({ description: 'ID of the cluster this pod belongs to.' }),
    rank: Nullable(Type.Integer({ description: 'Node rank (NODE_RANK); rank 0 is the entry node.' })),
    role: Type.Optional(StringEnum(CLUSTER_ROLES, { description: 'SLURM or RAY role; omitted otherwise.' })),
    ip: Type.Optional(Type.String({ description: "Address on the cluster's private overlay network." })),
  },
  { ...closed, description: "A pod's membership in a cluster." },
);

export const Pod = Type.Object({
  id: Type.String(),
  name: Type.String(),
  status: StringEnum(POD_STATUSES),
  actions: Type.Array(StringEnum(POD_ACTIONS)),
  image: Type.String(),
  args: Type.String(),
  disk: Type.Integer(),
  mounts: Type.Object({
    persistent: Type.Optional(Type.Object({ size: Type.Integer(), path: Type.String() })),
    network: Type.Optional(Type.Array(Type.Object({ volumeId: Type.String(), path: Type.String() }))),
  }),
  ports: Type.Array(Type.String()),
  env: Type.Record(Type.String(), Type.String()),
  registry: Nullable(Type.String()),
  gpu: Type.Optional(
    Type.Object({
      id: Type.String(),
      count: Type.Integer(),
      vcpuCount: Type.Optional(
        Type.Integer({ description: 'the vCPUs the pod is given with its GPUs (all of them, not per GPU)' }),
      ),
      memory: Type.Optional(
        Type.Integer({ description: 'the GB of memory the pod is given with its GPUs (all of them, not per GPU)' }),
      ),
    }),
  ),
  cpu: Type.Optional(Type.Object({ id: Type.String(), vcpuCount: Type.Integer(), memory: Type.Integer() })),
  vcpuCount: Nullable(
    Type.Integer({
      description:
        "Gantry extension: the vCPUs the pod is given (a CPU pod's own; a GPU pod's allotment with its GPUs); null for a GPU pod stored before allotments, until its next start",
    }),
  ),
  memoryInGb: Nullable(
    Type.Integer({
      description:
        "Gantry extension: the GB of memory the pod is given (a CPU pod's own; a GPU pod's allotment with its GPUs); null as vcpuCount",
    }),
  ),
  cloud: Cloud,
  dataCenterId: Nullable(Type.String()),
  cudaVersion: Nullable(Type.String()),
  ssh: Type.Object({ proxy: Nullable(SshEndpoint), direct: Nullable(SshEndpoint) }),
  httpProxy: Type.Array(
    Type.Object({
      port: Type.Integer({ description: 'the pod port (`<port>/http`)' }),
      url: Type.String({ format: 'uri', description: "the port's URL through the pod HTTP proxy" }),
      link: Type.Optional(
        Type.String({
          format: 'uri',
          description:
            'with `proxy.requireKey` on: the URL with a ticket valid a few minutes, which sets a cookie that opens the port in a browser without the key',
        }),
      ),
    }),
    {
      description:
        'Gantry extension (docs/proxy.md): each `<port>/http` port reached through the pod HTTP proxy, once the pod has a machine assignment; empty while the proxy is off. The URL is the capability to reach the port: share it as you would a password.',
    },
  ),
  template: Nullable(Type.String()),
  cost: Type.Number({ description: 'USD per hour; 0 when EXITED, ERROR or TERMINATED' }),
  locked: Type.Boolean(),
  globalNetworking: Type.Object({
    enabled: Type.Boolean(),
    ip: Type.Optional(Type.String()),
    internalDns: Type.Optional(Type.String()),
  }),
  runtime: Nullable(PodRuntime),
  createdAt: Type.String({ format: 'date-time' }),
  startedAt: Nullable(Type.String({ format: 'date-time' })),
  statusReason: Nullable(Type.String({ description: 'Gantry extension: why the pod is EXITED or ERROR' })),
  cluster: Type.Optional(PodCluster),
  interruptible: Type.Optional(
    Type.Literal(true, { description: 'Gantry extension: present on interruptible (spot) pods only' }),
  ),
  bidPerGpu: Type.Optional(
    Type.Number({ description: "Gantry extension: an interruptible pod's bid, USD per GPU per hour" }),
  ),
});

export const PodList = Type.Object({ pods: Type.Array(Pod) });

export const PodListQuery = Type.Object(
  {
    includeClusterPods: Type.Optional(Type.Boolean({ default: false })),
    includeTerminated: Type.Optional(Type.Boolean({ default: false })),
    status: Type.Optional(Type.Union(POD_STATUSES.map((s) => Type.Literal(s)))),
    name: Type.Optional(Type.String({ minLength: 1 })),
    gpuTypeId: Type.Optional(Type.String({ minLength: 1 })),
    dataCenterId: Type.Optional(Type.String({ minLength: 1 })),
    // Gantry extension (docs/api.md "Paging the pod list"): absent, the answer is the spec's whole list
    search: Type.Optional(
      Type.String({
        maxLength: POD_SEARCH_MAX,
        description:
          'Gantry extension: whitespace-separated words; a pod matches when every word is in its name, id, status, GPU or CPU, image or data center (case-insensitive).',
      }),
    ),
    sort: Type.Optional(
      StringEnum(POD_SORTS, {
        description: 'Gantry extension: the order of the list; ties fall to the pod id. Default `created`.',
      }),
    ),
    order: Type.Optional(StringEnum(POD_ORDERS, { description: 'Gantry extension: `asc` (default) or `desc`.' })),
    offset: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: POD_OFFSET_MAX,
        description: 'Gantry extension: how many pods of the sorted list to skip. Default 0.',
      }),
    ),
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: POD_PAGE_MAX,
        description: `Gantry extension: at most this many pods (1–${POD_PAGE_MAX}); absent, every pod from offset on.`,
      }),
    ),
  },
  {
    description:
      'Filters; unknown query parameters are ignored. With any of search, sort, order, offset or limit (Gantry extension) the answer is a page and carries X-Total-Count, X-Gantry-Running-Count and X-Gantry-Cost-Per-Hr.',
  },
);

/** The figures a page of the list carries (Gantry extension), in the OpenAPI document. */
export const PodPageHeaders = {
  'x-total-count': {
    type: 'integer',
    description:
      'Gantry extension, with a paging parameter: pods matching the filters and search, before offset and limit.',
  },
  'x-gantry-running-count': {
    type: 'integer',
    description: 'Gantry extension, with a paging parameter: how many of the matching pods are RUNNING.',
  },
  'x-gantry-cost-per-hr': {
    type: 'number',
    description: "Gantry extension, with a paging parameter: the sum of the matching pods' cost, USD per hour.",
  },
} as const;

// The schemas and the service types must describe the same shapes.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const assertTrue = <T extends true>(): T => true as T;
assertTrue<Same<Static<typeof CreatePodRequest>, CreatePodInput>>();
assertTrue<Same<Static<typeof PatchPodRequest>, PatchPodInput>>();
const _viewFits = (v: PodView): Static<typeof Pod> => v;
void _viewFits;
