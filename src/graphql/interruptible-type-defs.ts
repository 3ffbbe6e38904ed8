/**
 * The SDL of interruptible (spot) pods: renting one with a bid per GPU, and resuming a stopped pod
 * with one (docs/pods.md, "Interruptible pods"). The input takes what dstack's and SkyPilot's
 * RunPod backends send.
 */
export const interruptibleTypeDefs = /* GraphQL */ `
  extend type Mutation {
    "Rents an interruptible GPU pod at bidPerGpu (USD per GPU per hour, at least the GPU type's lowestPrice.minimumBidPrice): billed at its bid, stopped when an on-demand pod or a higher bid needs its machine."
    podRentInterruptable(input: PodRentInterruptableInput): Pod
    "Starts a stopped GPU pod again on its host as an interruptible one bidding bidPerGpu; gpuCount, when sent, must be the pod's own."
    podBidResume(input: PodBidResumeInput): Pod
  }

  input PodBidResumeInput {
    podId: String
    bidPerGpu: Float
    gpuCount: Int
  }

  input PodRentInterruptableInput {
    "USD per GPU per hour; without it the pod bids its GPU type's floor."
    bidPerGpu: Float
    name: String
    imageName: String
    gpuTypeId: String
    gpuCount: Int
    cloudType: CloudType
    "One data center id, or several separated by commas (any of them)."
    dataCenterId: String
    countryCode: String
    containerDiskInGb: Int
    volumeInGb: Int
    volumeMountPath: String
    minVcpuCount: Int
    minMemoryInGb: Int
    minDisk: Int
    dockerArgs: String
    ports: String
    env: [EnvironmentVariableInput]
    templateId: String
    networkVolumeId: String
    allowedCudaVersions: [String]
    minCudaVersion: String
    "The least CUDA version of the host, as minCudaVersion."
    cudaVersion: String
    startSsh: Boolean
    startJupyter: Boolean
    supportPublicIp: Boolean
    containerRegistryAuthId: String
    minDownload: Int
    minUpload: Int
    stopAfter: String
    terminateAfter: String
    "Not supported: refused unless empty (Gantry does not encrypt pod volumes)."
    volumeKey: String
    globalNetworking: Boolean
  }
`;
