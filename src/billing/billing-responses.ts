/** The response shapes of the billing operations (the public OpenAPI's), one per operation. */
import type { BucketSize } from './billing-window.js';

export interface QueryEcho {
  startTime: string;
  endTime: string;
  bucketSize: BucketSize;
}

export interface Bucketed {
  startTime: string;
  endTime: string;
}

export interface BillingAmounts {
  totalAmount: number;
  podGpuAmount: number;
  podCpuAmount: number;
  podDiskAmount: number;
  serverlessGpuAmount: number;
  serverlessCpuAmount: number;
  serverlessDiskAmount: number;
  serverlessFeeAmount: number;
  storageStandardAmount: number;
  storageHighPerformanceAmount: number;
  endpointAmount: number;
  clusterGpuAmount: number;
  clusterDiskAmount: number;
  clusterNetworkingAmount: number;
}
export interface PodBillingAmounts {
  totalAmount: number;
  gpuAmount: number;
  cpuAmount: number;
  diskAmount: number;
}
export interface ServerlessBillingAmounts extends PodBillingAmounts {
  feeAmount: number;
}
interface EndpointBillingAmounts {
  totalAmount: number;
}
export interface NetworkVolumeBillingAmounts {
  totalAmount: number;
  standardAmount: number;
  highPerformanceAmount: number;
}
export interface ClusterBillingAmounts {
  totalAmount: number;
  gpuAmount: number;
  diskAmount: number;
  networkingAmount: number;
}

export interface ListBillingResponse {
  records: Array<Bucketed & BillingAmounts>;
  metadata: { query: QueryEcho; recordCount: number; totals: BillingAmounts };
}
export interface ListPodBillingResponse {
  records: Array<Bucketed & PodBillingAmounts & { podId: string }>;
  metadata: {
    query: QueryEcho & { podId: string | null };
    recordCount: number;
    uniquePodCount: number;
    totals: PodBillingAmounts;
  };
}
export interface ListServerlessBillingResponse {
  records: Array<Bucketed & ServerlessBillingAmounts & { serverlessId: string }>;
  metadata: {
    query: QueryEcho & { serverlessId: string | null };
    recordCount: number;
    uniqueServerlessCount: number;
    totals: ServerlessBillingAmounts;
  };
}
export interface ListEndpointBillingResponse {
  records: Array<Bucketed & EndpointBillingAmounts>;
  metadata: { query: QueryEcho; recordCount: number; totals: EndpointBillingAmounts };
}
export interface ListNetworkVolumeBillingResponse {
  records: Array<Bucketed & NetworkVolumeBillingAmounts & { networkVolumeId: string }>;
  metadata: {
    query: QueryEcho & { networkVolumeId: string | null };
    recordCount: number;
    uniqueNetworkVolumeCount: number;
    totals: NetworkVolumeBillingAmounts;
  };
}
export interface ListClusterBillingResponse {
  records: Array<Bucketed & ClusterBillingAmounts & { clusterId: string }>;
  metadata: {
    query: QueryEcho & { clusterId: string | null };
    recordCount: number;
    uniqueClusterCount: number;
    totals: ClusterBillingAmounts;
  };
}
