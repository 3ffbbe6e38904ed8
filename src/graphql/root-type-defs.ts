/** The SDL of the roots, of the account (`User`) that links every area, and of the types all areas share. */
export const rootTypeDefs = /* GraphQL */ `
  "FLASHBOOT or OFF. Accepts the enum literal (flashBootType: FLASHBOOT), a string, or \\"\\" for OFF."
  scalar FlashBootType

  type Query {
    myself: User
    "Catalog GPU types; input.id narrows to one."
    gpuTypes(input: GpuTypeFilter): [GpuType]
    "The countries of the data centers that have hosts."
    countryCodes: [String]
    cpuFlavors: [CpuFlavor]
    "Serverless GPU pools (the values of gpuIds) and the GPU types in each."
    serverlessGpuPools: [ServerlessGpuPool]
    "One of your endpoints."
    endpoint(id: String!): Endpoint
    "One of your pods."
    pod(input: PodFilter): Pod
    "The data centers and the GPU types their hosts offer."
    dataCenters: [DataCenter]
    "The public template catalog: the templates Gantry ships (isRunpod true). isRunpod false answers the community ones, none on Gantry, where accounts cannot publish templates."
    podTemplates(input: PodTemplateInput): [PodTemplate]
    "One of your templates, or a public one."
    podTemplate(id: String!): PodTemplate
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
    "The account's auth identity, \\"gantry|<account id>\\": Gantry authenticates the account's API keys itself, so the account is the identity; the same for every key, stable for the account's life."
    authId: String
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
`;
