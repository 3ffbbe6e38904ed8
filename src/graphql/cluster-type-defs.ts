/** The SDL of multi-node clusters as dstack creates and deletes them (REST /v2/clusters, docs/clusters.md). */
export const clusterTypeDefs = /* GraphQL */ `
  enum ClusterType {
    APPLICATION
    TRAINING
    SLURM
    RAY
  }

  input CreateClusterInput {
    clusterName: String
    gpuTypeId: String
    "Pods (nodes), 2-250."
    podCount: Int
    "GPUs on each pod. @default 1"
    gpuCountPerPod: Int
    imageName: String
    type: ClusterType
    "The most the whole cluster may cost, USD per hour; a placement above it is refused as no capacity is."
    deployCost: Float
    "A pod template the members take their settings from; the fields given here win."
    templateId: String
    "A network volume every member mounts at volumeMountPath (the cluster is placed in its data center)."
    networkVolumeId: String
    "A persistent volume per member, GB (without networkVolumeId)."
    volumeInGb: Int
    "Accepted, not used: Gantry's hosts have no throughput figures."
    throughput: Int
    allowedCudaVersions: [String]
    minCudaVersion: String
    "Accepted, not used."
    volumeKey: String
    dataCenterId: String
    startJupyter: Boolean
    startSsh: Boolean
    containerDiskInGb: Int
    dockerArgs: String
    env: [EnvironmentVariableInput]
    "@default /workspace"
    volumeMountPath: String
    "Comma list, e.g. \\"22/tcp,8888/http\\"."
    ports: String
  }

  input DeleteClusterInput {
    id: String
  }

  type Cluster {
    id: String
    name: String
    type: ClusterType
    gpuTypeId: String
    podCount: Int
    gpuCountPerPod: Int
    "null until the members are placed."
    dataCenterId: String
    "The members, by rank (clusterIp: each one's address on the cluster's private network)."
    pods: [Pod]
  }

  extend type Mutation {
    "Creates a cluster: podCount identical pods in one data center on one private network (as POST /v2/clusters)."
    createCluster(input: CreateClusterInput): Cluster
    "Terminates every member and deletes the cluster; a cluster that is not there is an error whose extensions.code is \\"Cluster not found\\". Answers true."
    deleteCluster(input: DeleteClusterInput): Boolean
  }
`;
