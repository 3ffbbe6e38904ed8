/** The SDL of the catalog: GPU types with their prices and stock, and the serverless GPU pools. */
export const catalogTypeDefs = /* GraphQL */ `
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

  type DataCenter {
    id: String
    name: String
    location: String
    countryCode: String
    "False when no host in it is available."
    listed: Boolean
    "One entry per GPU type some host in the data center has; with input, whether a pod of input.gpuCount GPUs fits on one of its hosts now, in the cloud input.secureCloud names (both when it is not said)."
    gpuAvailability(input: GpuAvailabilityInput): [GpuAvailabilityInDataCenter]
  }

  input GpuAvailabilityInput {
    "GPUs one pod needs on one host. @default 1"
    gpuCount: Int
    "true: SECURE cloud hosts only; false: COMMUNITY only; not said: either."
    secureCloud: Boolean
  }

  type GpuAvailabilityInDataCenter {
    gpuTypeId: String
    displayName: String
    "Without input: the GPU type's stock across the catalog (High, Medium or Low) where the data center has one free. With input: the data center's own level for that pod size (High, Medium or Low). null where none is free."
    stockStatus: String
    available: Boolean
  }

  type ServerlessGpuPool {
    id: String
    displayName: String
    memoryInGb: Int
    gpuTypeIds: [String]
  }
`;
