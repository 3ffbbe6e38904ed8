/**
 * The SDL of pods: the inputs that deploy, stop, resume and terminate them, and the pod as
 * clients read it (its machine and its runtime ports).
 */
export const podTypeDefs = /* GraphQL */ `
  input PodFilter {
    podId: String
  }

  input PodFindAndDeployOnDemandInput {
    name: String
    imageName: String
    gpuTypeId: String
    gpuTypeIdList: [String]
    gpuCount: Int
    cloudType: CloudType
    dataCenterId: String
    countryCode: String
    containerDiskInGb: Int
    volumeInGb: Int
    volumeMountPath: String
    minVcpuCount: Int
    minMemoryInGb: Int
    dockerArgs: String
    ports: String
    env: [EnvironmentVariableInput]
    templateId: String
    networkVolumeId: String
    allowedCudaVersions: [String]
    minCudaVersion: String
    startSsh: Boolean
    startJupyter: Boolean
    supportPublicIp: Boolean
    containerRegistryAuthId: String
    minDownload: Int
    minUpload: Int
    "When the pod stops itself (RFC 3339, e.g. \\"2026-04-15T00:00:00Z\\"); \\"\\" for never."
    stopAfter: String
    "When the pod terminates itself (RFC 3339); \\"\\" for never."
    terminateAfter: String
    "Not supported: refused unless empty."
    compliance: [String]
    globalNetworking: Boolean
    "The most the pod may cost, USD per hour; a placement above it is refused as no capacity is."
    deployCost: Float
  }

  input DeployCpuPodInput {
    name: String
    imageName: String
    instanceId: String
    cloudType: CloudType
    dataCenterId: String
    countryCode: String
    containerDiskInGb: Int
    volumeInGb: Int
    volumeMountPath: String
    dockerArgs: String
    ports: String
    env: [EnvironmentVariableInput]
    templateId: String
    networkVolumeId: String
    startSsh: Boolean
    startJupyter: Boolean
    supportPublicIp: Boolean
    containerRegistryAuthId: String
    minDownload: Int
    minUpload: Int
    vcpuCount: Int
    "The most the pod may cost, USD per hour; a placement above it is refused as no capacity is."
    deployCost: Float
    "When the pod stops itself (RFC 3339); \\"\\" for never."
    stopAfter: String
    "When the pod terminates itself (RFC 3339); \\"\\" for never."
    terminateAfter: String
  }

  enum CloudType {
    ALL
    SECURE
    COMMUNITY
  }

  input PodStopInput {
    podId: String
    incrementVersion: Boolean
  }

  input PodResumeInput {
    podId: String
    gpuCount: Int
  }

  input PodTerminateInput {
    podId: String
  }

  type Pod {
    id: String
    name: String
    imageName: String
    "K=V strings."
    env: [String]
    desiredStatus: String
    lastStatusChange: String
    costPerHr: Float
    containerDiskInGb: Int
    volumeInGb: Int
    volumeMountPath: String
    dockerArgs: String
    dockerId: String
    gpuCount: Int
    vcpuCount: Float
    memoryInGb: Float
    "RESERVED (on demand) or INTERRUPTABLE (spot: placement may take its machine back)."
    podType: String
    port: Int
    ports: String
    uptimeSeconds: Int
    machineId: String
    "A cluster member's address on its cluster's private network; null for a pod outside a cluster."
    clusterIp: String
    "The registry credential the pod pulls its image with; null for none."
    containerRegistryAuthId: String
    "The network volume the pod mounts; null for none."
    networkVolumeId: String
    machine: PodMachine
    runtime: PodRuntime
  }

  type PodMachine {
    "The username of the pod on the SSH proxy (ssh <podHostId>@<proxy host>), as ssh.proxy.username in REST; the pod id while the proxy does not listen."
    podHostId: String
    gpuDisplayName: String
    gpuTypeId: String
    location: String
    dataCenterId: String
  }

  "What runs, from the runtime's last utilisation sample (null unless the pod is RUNNING)."
  type PodRuntime {
    uptimeInSeconds: Int
    "Each port as the pod's network reaches it (isIpPublic false), then as published on its host (isIpPublic true)."
    ports: [PodRuntimePort]
    "Per GPU of the pod, from nvidia-smi; empty where there are no real figures (declared GPUs)."
    gpus: [PodRuntimeGpu]
    container: PodRuntimeContainer
  }

  type PodRuntimeGpu {
    "The GPU's UUID (GPU-…), or its position in the pod when the runtime does not know it."
    id: String
    gpuUtilPercent: Int
    memoryUtilPercent: Int
  }

  "CPU and memory in percent of what the pod was allotted."
  type PodRuntimeContainer {
    cpuPercent: Int
    memoryPercent: Int
  }

  type PodRuntimePort {
    ip: String
    isIpPublic: Boolean
    privatePort: Int
    publicPort: Int
    type: String
  }
`;
