import { buildSchema, GraphQLError, GraphQLScalarType, Kind, type GraphQLFieldResolver, type GraphQLSchema, type ValueNode } from 'graphql';

/**
 * The GraphQL management API, in the shape existing clients (runpod-python, runpodctl) query it.
 * Input types are liberal: every field is nullable so that a missing one is answered with a
 * sentence from the service rather than a type error, and fields newer clients send but Gantry
 * does not act on are accepted (and refused by the resolver only when they ask for something).
 */
export const typeDefs = /* GraphQL */ `
  "FLASHBOOT or OFF. Accepts the enum literal (flashBootType: FLASHBOOT), a string, or \\"\\" for OFF."
  scalar FlashBootType

  type Query {
    myself: User
    "Catalog GPU types; input.id narrows to one."
    gpuTypes(input: GpuTypeFilter): [GpuType]
    "Serverless GPU pools (the values of gpuIds) and the GPU types in each."
    serverlessGpuPools: [ServerlessGpuPool]
    "One of your endpoints."
    endpoint(id: String!): Endpoint
    "One of your pods."
    pod(input: PodFilter): Pod
  }

  type Mutation {
    "Creates an endpoint, or replaces every setting of one when input.id is given."
    saveEndpoint(input: EndpointInput!): Endpoint
    "Deletes an endpoint; refused until workersMin and workersMax are 0. Answers null."
    deleteEndpoint(id: String!): Boolean
    updateEndpointTemplate(input: UpdateEndpointTemplateInput): Endpoint
    "Creates a template, or changes one when input.id is given."
    saveTemplate(input: SaveTemplateInput): PodTemplate
    saveRegistryAuth(input: SaveRegistryAuthInput): ContainerRegistryAuth
    updateRegistryAuth(input: UpdateRegistryAuthInput): ContainerRegistryAuth
    "Answers null."
    deleteRegistryAuth(registryAuthId: String!): Boolean
    "pubKey holds the account's SSH public keys, one per line; it replaces them all."
    updateUserSettings(input: UpdateUserSettingsInput): User
    podFindAndDeployOnDemand(input: PodFindAndDeployOnDemandInput): Pod
    deployCpuPod(input: DeployCpuPodInput): Pod
    podStop(input: PodStopInput): Pod
    podResume(input: PodResumeInput): Pod
    "Answers null."
    podTerminate(input: PodTerminateInput): Boolean
  }

  type User {
    id: String
    email: String
    pubKey: String
    endpoints: [Endpoint]
    "null: Gantry has no serverless discounts."
    serverlessDiscount: ServerlessDiscount
    networkVolumes: [NetworkVolume]
    pods: [Pod]
    podTemplates: [PodTemplate]
    containerRegistryCreds: [ContainerRegistryAuth]
    clientBalance: Float
    currentSpendPerHr: Float
    spendLimit: Int
    notifyPodsStale: Boolean
    notifyPodsGeneral: Boolean
    notifyLowBalance: Boolean
  }

  type ServerlessDiscount {
    discountFactor: Float
    type: String
    expirationDate: String
  }

  type EnvironmentVariable {
    key: String
    value: String
  }

  input EnvironmentVariableInput {
    key: String!
    value: String
  }

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
    "A comma list (\\"12.1,12.2\\") or a list of versions."
    allowedCudaVersions: [String]
    "Not supported: use allowedCudaVersions."
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
    "Not supported: create the template with saveTemplate (isServerless: true) and pass templateId."
    template: EndpointTemplateInput
  }

  input UpdateEndpointTemplateInput {
    endpointId: String
    templateId: String
  }

  type PodTemplate {
    id: String
    name: String
    imageName: String
    dockerArgs: String
    containerDiskInGb: Int
    volumeInGb: Int
    volumeMountPath: String
    "Comma list, e.g. \\"8888/http,22/tcp\\"."
    ports: String
    env: [EnvironmentVariable]
    isServerless: Boolean
    readme: String
    containerRegistryAuthId: String
    startSsh: Boolean
    startJupyter: Boolean
    startScript: String
    advancedStart: Boolean
    isPublic: Boolean
    category: String
  }

  input SaveTemplateInput {
    id: String
    name: String
    imageName: String
    dockerArgs: String
    containerDiskInGb: Int
    volumeInGb: Int
    volumeMountPath: String
    ports: String
    env: [EnvironmentVariableInput]
    isServerless: Boolean
    readme: String
    "\\"\\" means none."
    containerRegistryAuthId: String
    startSsh: Boolean
    startJupyter: Boolean
    isPublic: Boolean
    category: String
    startScript: String
    advancedStart: Boolean
  }

  type ContainerRegistryAuth {
    id: String
    name: String
  }

  input SaveRegistryAuthInput {
    name: String
    username: String
    password: String
  }

  input UpdateRegistryAuthInput {
    id: String
    username: String
    password: String
  }

  input UpdateUserSettingsInput {
    pubKey: String
  }

  type NetworkVolume {
    id: String
    name: String
    size: Int
    dataCenterId: String
  }

  input GpuTypeFilter {
    id: String
  }

  input GpuLowestPriceInput {
    gpuCount: Int
    minMemoryInGb: Int
    minVcpuCount: Int
    secureCloud: Boolean
    totalDisk: Int
    minDisk: Int
    countryCode: String
    dataCenterId: String
    minDownload: Int
    minUpload: Int
    supportPublicIp: Boolean
  }

  type GpuType {
    id: String
    displayName: String
    manufacturer: String
    memoryInGb: Int
    cudaCores: Int
    secureCloud: Boolean
    communityCloud: Boolean
    securePrice: Float
    communityPrice: Float
    oneMonthPrice: Float
    threeMonthPrice: Float
    oneWeekPrice: Float
    communitySpotPrice: Float
    secureSpotPrice: Float
    maxGpuCount: Int
    maxGpuCountSecureCloud: Int
    maxGpuCountCommunityCloud: Int
    lowestPrice(input: GpuLowestPriceInput): LowestPrice
  }

  type LowestPrice {
    gpuName: String
    gpuTypeId: String
    "Gantry has no spot market: always null."
    minimumBidPrice: Float
    "Per GPU per hour, USD."
    uninterruptablePrice: Float
    minMemory: Int
    minVcpu: Int
    stockStatus: String
  }

  type ServerlessGpuPool {
    id: String
    displayName: String
    memoryInGb: Int
    gpuTypeIds: [String]
  }

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
    stopAfter: String
    terminateAfter: String
    compliance: [String]
    globalNetworking: Boolean
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
    podType: String
    port: Int
    ports: String
    uptimeSeconds: Int
    machineId: String
    machine: PodMachine
    runtime: PodRuntime
  }

  type PodMachine {
    podHostId: String
    gpuDisplayName: String
    location: String
  }

  type PodRuntime {
    uptimeInSeconds: Int
    ports: [PodRuntimePort]
  }

  type PodRuntimePort {
    ip: String
    isIpPublic: Boolean
    privatePort: Int
    publicPort: Int
    type: String
  }
`;

const FLASHBOOT_VALUES = ['FLASHBOOT', 'OFF'] as const;
export type FlashBootType = (typeof FLASHBOOT_VALUES)[number];

const flashBootError = (got: string): GraphQLError =>
  new GraphQLError(`flashBootType: "${got}" is not valid; use FLASHBOOT or OFF.`, { extensions: { code: 'VALIDATION_FAILED' } });

function parseFlashBoot(value: unknown): FlashBootType {
  if (value === '' || value === false) return 'OFF';
  if (value === true) return 'FLASHBOOT';
  const text = typeof value === 'string' ? value.toUpperCase() : String(value);
  if ((FLASHBOOT_VALUES as readonly string[]).includes(text)) return text as FlashBootType;
  throw flashBootError(String(value));
}

function parseFlashBootLiteral(node: ValueNode): FlashBootType {
  if (node.kind === Kind.ENUM || node.kind === Kind.STRING) return parseFlashBoot(node.value);
  if (node.kind === Kind.BOOLEAN) return parseFlashBoot(node.value);
  throw flashBootError(node.kind);
}

/** Resolvers by type and field, attached to the SDL above. */
export type ResolverMap<TContext> = Record<string, Record<string, GraphQLFieldResolver<any, TContext, any>>>;

/** Builds the executable schema: the SDL, its resolvers, and the FlashBootType scalar's parsing. */
export function createSchema<TContext>(resolvers: ResolverMap<TContext>): GraphQLSchema {
  const schema = buildSchema(typeDefs);
  for (const [typeName, fields] of Object.entries(resolvers)) {
    const type = schema.getType(typeName);
    if (!type || !('getFields' in type)) throw new Error(`GraphQL resolvers name unknown type ${typeName}`);
    const defined = type.getFields() as Record<string, { resolve?: unknown }>;
    for (const [fieldName, resolve] of Object.entries(fields)) {
      const field = defined[fieldName];
      if (!field) throw new Error(`GraphQL resolvers name unknown field ${typeName}.${fieldName}`);
      field.resolve = resolve;
    }
  }
  const flashBoot = schema.getType('FlashBootType') as GraphQLScalarType;
  flashBoot.parseValue = parseFlashBoot;
  flashBoot.parseLiteral = parseFlashBootLiteral;
  flashBoot.serialize = (v: unknown) => parseFlashBoot(v);
  return schema;
}
