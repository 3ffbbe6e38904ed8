import type { Template } from '../domain/template.js';

/** A catalog template as shipped: everything but ownership and timestamps. */
export type PublicTemplate = Omit<Template, 'accountId' | 'isPublic' | 'createdAt' | 'updatedAt'>;

const base = {
  args: '',
  volumeInGb: 0,
  volumeMountPath: null,
  ports: [],
  env: {},
  containerRegistryAuthId: null,
  startSsh: false,
  startJupyter: false,
  allowedCudaVersions: [],
  isServerless: false,
} satisfies Partial<PublicTemplate>;

/**
 * The public templates every Gantry ships (`GET /v2/catalog/templates`). Their ids are stable:
 * pods and endpoints name them, and `TemplatesService.seedPublic()` upserts them on every start.
 */
export const publicTemplates: readonly PublicTemplate[] = [
  {
    ...base,
    id: 'gantry-pytorch-2-4',
    name: 'PyTorch 2.4 (CUDA 12.4)',
    imageName: 'pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime',
    containerDiskInGb: 50,
    volumeInGb: 20,
    volumeMountPath: '/workspace',
    ports: ['8888/http', '22/tcp'],
    startSsh: true,
    startJupyter: true,
    allowedCudaVersions: ['12.4', '12.5', '12.6', '12.8'],
    category: 'NVIDIA',
    readme: 'PyTorch 2.4 with CUDA 12.4 and cuDNN 9. JupyterLab on port 8888, SSH on 22; /workspace persists.',
  },
  {
    ...base,
    id: 'gantry-tensorflow-2-16',
    name: 'TensorFlow 2.16 (GPU)',
    imageName: 'tensorflow/tensorflow:2.16.1-gpu-jupyter',
    containerDiskInGb: 40,
    volumeInGb: 20,
    volumeMountPath: '/workspace',
    ports: ['8888/http', '22/tcp'],
    startSsh: true,
    startJupyter: true,
    allowedCudaVersions: ['12.2', '12.4', '12.8'],
    category: 'NVIDIA',
    readme: 'TensorFlow 2.16 with GPU support and JupyterLab on port 8888; SSH on 22.',
  },
  {
    ...base,
    id: 'gantry-ubuntu-cuda-12-4',
    name: 'Ubuntu 22.04 + CUDA 12.4',
    imageName: 'nvidia/cuda:12.4.1-runtime-ubuntu22.04',
    containerDiskInGb: 20,
    ports: ['22/tcp'],
    startSsh: true,
    category: 'NVIDIA',
    readme: 'A plain Ubuntu 22.04 base with the CUDA 12.4 runtime and SSH on port 22.',
  },
  {
    ...base,
    id: 'gantry-ubuntu-cpu',
    name: 'Ubuntu 22.04 (CPU)',
    imageName: 'ubuntu:22.04',
    containerDiskInGb: 10,
    ports: ['22/tcp'],
    startSsh: true,
    category: 'CPU',
    readme: 'Ubuntu 22.04 for CPU pods, with SSH on port 22.',
  },
  {
    ...base,
    id: 'gantry-worker-base',
    name: 'Serverless worker base (Python 3.11)',
    imageName: 'gantry/worker-base:py3.11',
    containerDiskInGb: 10,
    isServerless: true,
    category: 'NVIDIA',
    readme:
      'A base image for queue-based serverless workers: Python 3.11 with a handler entry point. For endpoints only; pods cannot use it.',
  },
];
