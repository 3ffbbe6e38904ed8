/** A template as services see it (REST field names). */
export interface Template {
  id: string;
  /** null for public catalog templates */
  accountId: string | null;
  name: string;
  imageName: string;
  /** docker args / start command, a string like a pod's `args` */
  args: string;
  containerDiskInGb: number;
  /** persistent volume size; 0 = none */
  volumeInGb: number;
  volumeMountPath: string | null;
  ports: string[];
  env: Record<string, string>;
  containerRegistryAuthId: string | null;
  startSsh: boolean;
  startJupyter: boolean;
  allowedCudaVersions: string[];
  isServerless: boolean;
  isPublic: boolean;
  category: 'NVIDIA' | 'AMD' | 'CPU';
  readme: string;
  createdAt: number;
  updatedAt: number;
}
