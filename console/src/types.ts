/** The API shapes the console reads (REST v2; docs/api.md). Only the fields it shows. */

export type PodStatus = 'PROVISIONING' | 'STARTING' | 'RUNNING' | 'EXITED' | 'ERROR' | 'TERMINATED';
export type PodAction = 'start' | 'stop' | 'restart' | 'terminate';

interface SshEndpoint {
  host: string;
  port: number;
  username: string;
  command: string;
}

export interface Pod {
  id: string;
  name: string;
  status: PodStatus;
  actions: PodAction[];
  image: string;
  args: string;
  disk: number;
  ports: string[];
  gpu?: { id: string; count: number };
  cpu?: { id: string; vcpuCount: number; memory: number };
  cloud: 'SECURE' | 'COMMUNITY';
  dataCenterId: string | null;
  cudaVersion: string | null;
  ssh: { proxy: SshEndpoint | null; direct: SshEndpoint | null };
  /** each HTTP port through the pod HTTP proxy (docs/proxy.md) */
  httpProxy?: Array<{ port: number; url: string; link?: string }>;
  template: string | null;
  cost: number;
  locked: boolean;
  runtime: {
    uptime?: number;
    gpus?: Array<{ util: number; memoryUtil: number }>;
    cpu?: { util: number };
    memory?: { util: number };
    ports?: Array<{ private: number; public: number | null; type: string; ip: string | null }>;
  } | null;
  createdAt: string;
  startedAt: string | null;
  statusReason: string | null;
}

type Availability = 'NONE' | 'LOW' | 'MEDIUM' | 'HIGH';

export interface GpuType {
  id: string;
  name: string;
  memory: number;
  price: { secure: number; community: number };
  maxCount: { secure: number; community: number };
  availability?: Availability;
  dataCenters?: Array<{ id: string; name: string; availability: Availability }>;
  cudaVersions?: Array<{ version: string; available: boolean }>;
}

export interface Template {
  id: string;
  name: string;
  image: string;
  disk: number;
  ports: string[];
  serverless: boolean;
  public: boolean;
  startSsh: boolean;
  category?: string;
}

export interface LogLine {
  ts: string;
  source: 'container' | 'system';
  line: string;
}

export interface Endpoint {
  id: string;
  name: string;
  type?: 'QUEUE' | 'LOAD_BALANCER';
  /** A load-balancing endpoint's address on the proxy listener (absent while the proxy is off). */
  loadBalancerUrl?: string;
  image: string;
  gpu?: { pools: string[]; count: number };
  workers: { min: number; max: number };
  flashboot?: 'OFF' | 'FLASHBOOT';
  /** FlashBoot: seconds an idle worker is kept suspended, as stored (a Gantry extension; the operator's maximum bounds it). */
  flashBootKeepSeconds?: number;
}

export interface JobSummary {
  id: string;
  status: string;
  createdAt: string;
  delayTime?: number;
  executionTime?: number;
  retries: number;
}
