/**
 * The SDL of serverless endpoints: the endpoint as clients read it, and the inputs that save it or
 * swap its template.
 */
export const endpointTypeDefs = /* GraphQL */ `
  type Endpoint {
    id: String
    name: String
    templateId: String
    template: PodTemplate
    "Comma list of GPU pools."
    gpuIds: String
    gpuCount: Int
    networkVolumeId: String
    networkVolume: NetworkVolume
    networkVolumeIds: [EndpointNetworkVolume]
    "Comma list of country codes; empty means any."
    locations: String
    "Seconds."
    idleTimeout: Int
    scalerType: String
    scalerValue: Int
    workersMin: Int
    workersMax: Int
    workersStandby: Int
    "Comma list of major.minor versions."
    allowedCudaVersions: String
    minCudaVersion: String
    flashBootType: FlashBootType
    "Gantry extension: seconds an idle FlashBoot worker is kept suspended (as stored; serverless.flashboot.maxKeepMs bounds it at use)."
    flashBootKeepSeconds: Int
    "QB (queue-based) or LB (load balancing)."
    type: String
    computeType: String
    instanceIds: [String]
    executionTimeoutMs: Int
    userId: String
    version: Int
    "The endpoint's own env (overrides of the template's)."
    env: [EnvironmentVariable]
    createdAt: String
    aiKey: String
    modelReferences: [String]
    "The endpoint's workers."
    pods: [EndpointPod]
    "Gantry extension: a load-balancing (LB) endpoint's absolute address on the proxy listener, where its requests go with the account's key; null for a queue endpoint or while the proxy is off."
    loadBalancerUrl: String
  }

  type EndpointPod {
    id: String
    desiredStatus: String
  }

  type EndpointNetworkVolume {
    networkVolumeId: String
    dataCenterId: String
  }

  input EndpointNetworkVolumeInput {
    networkVolumeId: String
    dataCenterId: String
  }

  input EndpointTemplateInput {
    name: String
    imageName: String
    containerDiskInGb: Int
    dockerArgs: String
    env: [EnvironmentVariableInput]
  }

  input EndpointInput {
    id: String
    name: String
    templateId: String
    "Comma list of GPU pools, e.g. \\"ADA_24,AMPERE_24\\"."
    gpuIds: String
    gpuCount: Int
    networkVolumeId: String
    "Only one volume per endpoint is supported."
    networkVolumeIds: [EndpointNetworkVolumeInput]
    locations: String
    idleTimeout: Int
    scalerType: String
    scalerValue: Int
    workersMin: Int
    workersMax: Int
    flashBootType: FlashBootType
    "Gantry extension: seconds an idle FlashBoot worker is kept suspended, 0 to 86400 (default 600); left out of a save with an id, it is kept."
    flashBootKeepSeconds: Int
    "A comma list (\\"12.1,12.2\\") or a list of versions."
    allowedCudaVersions: [String]
    "Kept as allowedCudaVersions: the hosts' CUDA versions from this one up."
    minCudaVersion: String
    executionTimeoutMs: Int
    type: String
    env: [EnvironmentVariableInput]
    "Not supported (CPU endpoints)."
    instanceIds: [String]
    "Accepted and ignored."
    modelReferences: [String]
    "Not supported (hub releases)."
    hubReleaseId: String
    "On create only: a serverless template made from these fields, for this endpoint (removed again if the endpoint is refused). Ignored when id is given."
    template: EndpointTemplateInput
  }

  input UpdateEndpointTemplateInput {
    endpointId: String
    templateId: String
  }
`;
