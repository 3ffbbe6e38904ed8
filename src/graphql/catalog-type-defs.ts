/** The SDL of the catalog: GPU types with their prices and stock, and the serverless GPU pools. */
export const catalogTypeDefs = /* GraphQL */ `
  input GpuTypeFilter {
    id: String
    "True: only the types a cluster (several pods in one data center) can be made of."
    cluster: Boolean
  }

  input CpuFlavorSpecificsInput {
    dataCenterId: String
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
    minCudaVersion: String
    allowedCudaVersions: [String]
    compliance: [String]
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
    "The least an interruptible pod may bid per GPU per hour in community cloud; null where no host offers the type."
    communitySpotPrice: Float
    "The same in secure cloud."
    secureSpotPrice: Float
    maxGpuCount: Int
    maxGpuCountSecureCloud: Int
    maxGpuCountCommunityCloud: Int
    sixMonthPrice: Float
    "Gantry places pods of one GPU or more: 1."
    minPodGpuCount: Int
    "The data centers a cluster of this type can be made in (those with a host of it)."
    nodeGroupDatacenters: [DataCenter]
    "Per GPU per hour, USD: cluster members are billed as on-demand secure pods."
    clusterPrice: Float
    lowestPrice(input: GpuLowestPriceInput): LowestPrice
  }

  "A CPU flavor: pods of minVcpu…maxVcpu vCPUs (powers of two), ramMultiplier GB of memory per vCPU."
  type CpuFlavor {
    id: String
    displayName: String
    groupId: String
    minVcpu: Int
    maxVcpu: Int
    ramMultiplier: Int
    "Gantry bounds a CPU pod's disk by its request, not per vCPU: null."
    diskLimitPerVcpu: Int
    specifics(input: CpuFlavorSpecificsInput): CpuFlavorSpecifics
  }

  type CpuFlavorSpecifics {
    "High, Medium or Low where a host (of the data center, when given) has room for the smallest size; null where none has."
    stockStatus: String
    "USD per hour of the smallest size (minVcpu vCPUs) in secure cloud."
    securePrice: Float
  }

  type LowestPrice {
    gpuName: String
    gpuTypeId: String
    "The least bid per GPU per hour for an interruptible pod (podRentInterruptable), USD; null when out of stock."
    minimumBidPrice: Float
    "Per GPU per hour, USD."
    uninterruptablePrice: Float
    "GB of memory and vCPUs a pod of gpuCount GPUs of the type gets at least (the catalog's per-GPU figures)."
    minMemory: Int
    minVcpu: Int
    "High, Medium or Low where a host (in the data center or country, when given) has gpuCount free; null where none has."
    stockStatus: String
    "The compliance certifications of the offer: Gantry records none."
    compliance: [String]
    "The country asked for (countryCode), else null."
    countryCode: String
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
