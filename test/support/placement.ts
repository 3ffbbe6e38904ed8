import type { PlacementRequest } from '../../src/domain/placement-request.js';

const RTX4090 = 'NVIDIA GeForce RTX 4090';

/** One RTX 4090 on SECURE, no other constraint; tests override what they examine. */
export const gpuPlacementRequest = (fields: Partial<PlacementRequest> = {}): PlacementRequest => ({
  kind: 'gpu',
  gpuTypeIds: [RTX4090],
  gpuCount: 1,
  cpuFlavorId: null,
  vcpuCount: 4,
  memoryGb: 16,
  diskGb: 20,
  cloud: 'SECURE',
  dataCenterIds: [],
  volumeDataCenterId: null,
  allowedCudaVersions: [],
  minCudaVersion: null,
  portCount: 0,
  globalNetworking: false,
  ...fields,
});
