/**
 * Catalog and fleet types, and the defaults used when the config does not declare its own.
 * Prices are USD per hour: per GPU for GPU types, per vCPU for CPU flavors.
 */

export type Cloud = 'SECURE' | 'COMMUNITY';

export interface GpuType {
  id: string;
  displayName: string;
  manufacturer: string;
  memoryInGb: number;
  /** The serverless pool (GPU tier) this type belongs to, e.g. `ADA_24`. */
  pool: string;
  securePrice: number;
  communityPrice: number;
  /** Supports global networking (2.8). */
  globalNetworking: boolean;
  /**
   * The least an interruptible pod may bid per GPU per hour in each cloud (docs/pods.md,
   * "Interruptible pods"). @default 40% of the cloud's on-demand price
   */
  secureSpotPrice?: number;
  communitySpotPrice?: number;
  /**
   * vCPUs one GPU of this type comes with (an instance of n GPUs gets n × this, capped by its
   * host's share: domain/gpu-allotment.ts). @default 4
   */
  vcpusPerGpu?: number;
  /** GB of memory one GPU of this type comes with. @default 1.5 × memoryInGb, at least 16 */
  memoryGbPerGpu?: number;
}

export interface GpuPool {
  id: string;
  displayName: string;
  memoryInGb: number;
}

export interface CpuFlavor {
  id: string;
  displayName: string;
  /** GB of memory per vCPU. */
  ramMultiplier: number;
  /** Valid vCPU counts (powers of two, >= 2). */
  vcpuOptions: number[];
  securePricePerVcpu: number;
  communityPricePerVcpu: number;
}

export interface DataCenter {
  id: string;
  name: string;
  location: string;
  /** Two-letter country code; serverless `locations` filter on it. */
  country: string;
  globalNetworking: boolean;
}

export interface Host {
  id: string;
  dataCenterId: string;
  cloud: Cloud;
  /** CUDA version the host reports, major.minor; null for CPU-only hosts or when unknown. */
  cudaVersion: string | null;
  gpuTypeId: string | null;
  gpuCount: number;
  /** CPU flavors this host can serve CPU pods from. */
  cpuFlavors: string[];
  vcpus: number;
  memoryGb: number;
  diskGb: number;
  /** Public port range, inclusive. */
  portRange: [number, number];
  publicIp: string;
  /** Discovered hosts: the UUID of each GPU, by index (what placement's `gpuIndices` name). */
  gpuUuids?: string[];
  /**
   * Discovered hosts: how the runtime hands GPUs to instances. `nvidia`: device requests through
   * the engine's NVIDIA runtime; `env-only`: only `NVIDIA_VISIBLE_DEVICES`/`CUDA_VISIBLE_DEVICES`
   * (no NVIDIA runtime on the engine, as in CI with a stand-in nvidia-smi). Absent for declared hosts.
   */
  gpuMode?: 'nvidia' | 'env-only';
  /** Discovered hosts: what the runtime could not do on this host, in words (shown on its record). */
  notes?: string[];
}

export interface Catalog {
  gpuTypes: GpuType[];
  pools: GpuPool[];
  cpuFlavors: CpuFlavor[];
  dataCenters: DataCenter[];
}

const defaultPools: GpuPool[] = [
  { id: 'AMPERE_16', displayName: '16 GB Ampere', memoryInGb: 16 },
  { id: 'AMPERE_24', displayName: '24 GB Ampere', memoryInGb: 24 },
  { id: 'ADA_24', displayName: '24 GB Ada', memoryInGb: 24 },
  { id: 'AMPERE_48', displayName: '48 GB Ampere', memoryInGb: 48 },
  { id: 'ADA_48_PRO', displayName: '48 GB Ada Pro', memoryInGb: 48 },
  { id: 'AMPERE_80', displayName: '80 GB Ampere', memoryInGb: 80 },
  { id: 'ADA_80_PRO', displayName: '80 GB Ada Pro', memoryInGb: 80 },
];

const gpu = (
  id: string,
  displayName: string,
  memoryInGb: number,
  pool: string,
  securePrice: number,
  communityPrice: number,
  perGpu: [vcpus: number, memoryGb: number],
  globalNetworking = false,
): GpuType => ({
  id,
  displayName,
  manufacturer: 'Nvidia',
  memoryInGb,
  pool,
  securePrice,
  communityPrice,
  globalNetworking,
  vcpusPerGpu: perGpu[0],
  memoryGbPerGpu: perGpu[1],
});

// The last figures: vCPUs and GB of memory per GPU, what one GPU of the type comes with (about
// what GPU clouds sell with it: more memory than the GPU's own, more vCPUs for larger GPUs).
const defaultGpuTypes: GpuType[] = [
  gpu('NVIDIA RTX A4000', 'RTX A4000', 16, 'AMPERE_16', 0.25, 0.17, [4, 24]),
  gpu('NVIDIA RTX A4500', 'RTX A4500', 20, 'AMPERE_16', 0.27, 0.19, [4, 28]),
  gpu('NVIDIA RTX A5000', 'RTX A5000', 24, 'AMPERE_24', 0.29, 0.22, [4, 32]),
  gpu('NVIDIA GeForce RTX 3090', 'RTX 3090', 24, 'AMPERE_24', 0.43, 0.22, [4, 32]),
  gpu('NVIDIA L4', 'L4', 24, 'AMPERE_24', 0.43, 0.3, [6, 32]),
  gpu('NVIDIA GeForce RTX 4090', 'RTX 4090', 24, 'ADA_24', 0.69, 0.34, [6, 48], true),
  gpu('NVIDIA RTX A6000', 'RTX A6000', 48, 'AMPERE_48', 0.49, 0.33, [8, 64]),
  gpu('NVIDIA A40', 'A40', 48, 'AMPERE_48', 0.4, 0.35, [8, 64]),
  gpu('NVIDIA L40S', 'L40S', 48, 'ADA_48_PRO', 0.86, 0.79, [12, 96], true),
  gpu('NVIDIA RTX 6000 Ada Generation', 'RTX 6000 Ada', 48, 'ADA_48_PRO', 0.77, 0.74, [10, 96], true),
  gpu('NVIDIA A100 80GB PCIe', 'A100 PCIe', 80, 'AMPERE_80', 1.64, 1.19, [12, 128], true),
  gpu('NVIDIA A100-SXM4-80GB', 'A100 SXM', 80, 'AMPERE_80', 1.74, 1.39, [16, 128], true),
  gpu('NVIDIA H100 PCIe', 'H100 PCIe', 80, 'ADA_80_PRO', 2.39, 1.99, [16, 176], true),
  gpu('NVIDIA H100 80GB HBM3', 'H100 SXM', 80, 'ADA_80_PRO', 2.69, 2.49, [20, 192], true),
];

const defaultCpuFlavors: CpuFlavor[] = [
  {
    id: 'cpu3c',
    displayName: 'Compute-Optimized',
    ramMultiplier: 2,
    vcpuOptions: [2, 4, 8, 16, 32],
    securePricePerVcpu: 0.03,
    communityPricePerVcpu: 0.02,
  },
  {
    id: 'cpu3g',
    displayName: 'General Purpose',
    ramMultiplier: 4,
    vcpuOptions: [2, 4, 8, 16, 32],
    securePricePerVcpu: 0.04,
    communityPricePerVcpu: 0.03,
  },
  {
    id: 'cpu3m',
    displayName: 'Memory-Optimized',
    ramMultiplier: 8,
    vcpuOptions: [2, 4, 8, 16],
    securePricePerVcpu: 0.06,
    communityPricePerVcpu: 0.05,
  },
];

const defaultDataCenters: DataCenter[] = [
  { id: 'US-TX-3', name: 'US-TX-3', location: 'United States, Texas', country: 'US', globalNetworking: true },
  { id: 'US-CA-2', name: 'US-CA-2', location: 'United States, California', country: 'US', globalNetworking: false },
  { id: 'EU-RO-1', name: 'EU-RO-1', location: 'Europe, Romania', country: 'RO', globalNetworking: true },
  { id: 'EU-CZ-1', name: 'EU-CZ-1', location: 'Europe, Czech Republic', country: 'CZ', globalNetworking: false },
];

/** The embedded demo fleet: enough GPU and CPU hosts that every pool has stock on first start. */
export function defaultFleet(): Host[] {
  const host = (
    id: string,
    dataCenterId: string,
    cloud: Cloud,
    gpuTypeId: string | null,
    gpuCount: number,
    cudaVersion: string | null,
    vcpus: number,
    memoryGb: number,
    portBase: number,
    cpuFlavors: string[] = [],
  ): Host => ({
    id,
    dataCenterId,
    cloud,
    gpuTypeId,
    gpuCount,
    cudaVersion,
    cpuFlavors,
    vcpus,
    memoryGb,
    diskGb: 2000,
    portRange: [portBase, portBase + 999],
    publicIp: '127.0.0.1',
  });
  return [
    host('demo-tx-4090-a', 'US-TX-3', 'SECURE', 'NVIDIA GeForce RTX 4090', 8, '12.4', 64, 512, 20000),
    host('demo-tx-h100-a', 'US-TX-3', 'SECURE', 'NVIDIA H100 80GB HBM3', 8, '12.8', 128, 1024, 21000),
    host('demo-tx-a100-a', 'US-TX-3', 'SECURE', 'NVIDIA A100 80GB PCIe', 4, '12.2', 64, 512, 22000),
    host('demo-ca-a5000-a', 'US-CA-2', 'SECURE', 'NVIDIA RTX A5000', 4, '12.1', 32, 256, 23000),
    host('demo-ca-a4000-a', 'US-CA-2', 'COMMUNITY', 'NVIDIA RTX A4000', 4, '11.8', 32, 128, 24000),
    host('demo-ro-l40s-a', 'EU-RO-1', 'SECURE', 'NVIDIA L40S', 4, '12.4', 64, 512, 25000),
    host('demo-ro-a6000-a', 'EU-RO-1', 'COMMUNITY', 'NVIDIA RTX A6000', 4, '12.0', 48, 256, 26000),
    host('demo-cz-3090-a', 'EU-CZ-1', 'COMMUNITY', 'NVIDIA GeForce RTX 3090', 4, '12.2', 32, 128, 27000),
    host('demo-tx-cpu-a', 'US-TX-3', 'SECURE', null, 0, null, 64, 512, 28000, ['cpu3c', 'cpu3g', 'cpu3m']),
    host('demo-ro-cpu-a', 'EU-RO-1', 'COMMUNITY', null, 0, null, 32, 256, 29000, ['cpu3c', 'cpu3g']),
  ];
}

export const defaultCatalog = (): Catalog => ({
  gpuTypes: defaultGpuTypes,
  pools: defaultPools,
  cpuFlavors: defaultCpuFlavors,
  dataCenters: defaultDataCenters,
});
