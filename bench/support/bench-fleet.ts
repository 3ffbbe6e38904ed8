// The declared fleets the HTTP, memory, log-stream and console benchmarks run on: hosts of 8 GPUs
// each, their ports in ranges that repeat every 50 hosts (ports are per host).

export function benchFleet(
  hosts: number,
  types = ['NVIDIA GeForce RTX 4090', 'NVIDIA RTX A5000', 'NVIDIA A100 80GB PCIe', 'NVIDIA L40S'],
  /** Every host in this cloud, reporting this CUDA version. @default a third COMMUNITY, versions in turn */
  options: { cloud?: 'SECURE' | 'COMMUNITY'; cudaVersion?: string } = {},
) {
  const cudas = ['11.8', '12.1', '12.2', '12.4', '12.8'];
  const dcs = ['US-TX-3', 'US-CA-2', 'EU-RO-1', 'EU-CZ-1'];
  return Array.from({ length: hosts }, (_, i) => ({
    id: `bench-${i}`,
    dataCenterId: dcs[i % dcs.length],
    cloud: options.cloud ?? (i % 3 === 0 ? 'COMMUNITY' : 'SECURE'),
    gpuTypeId: types[i % types.length],
    gpuCount: 8,
    cudaVersion: options.cudaVersion ?? cudas[i % cudas.length],
    vcpus: 256,
    memoryGb: 2048,
    diskGb: 100_000,
    portRange: [10000 + (i % 50) * 1000, 10000 + (i % 50) * 1000 + 999],
  }));
}
