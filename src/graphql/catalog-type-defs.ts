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
    "One entry per GPU type some host in the data center has."
    gpuAvailability: [GpuAvailabilityInDataCenter]
  }

  type GpuAvailabilityInDataCenter {
    gpuTypeId: String
    displayName: String
    "The GPU type's stock across the catalog (High, Medium or Low) where the data center has one free; null where it has none free."
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
