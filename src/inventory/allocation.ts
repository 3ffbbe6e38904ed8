/** The exact resources one holder (pod or worker) keeps on a host. */
export interface Allocation {
  hostId: string;
  gpuIndices: number[];
  vcpus: number;
  memoryGb: number;
  diskGb: number;
  publicPorts: number[];
}
