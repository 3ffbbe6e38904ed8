/**
 * Table shapes shared by both dialects. Conventions that keep one code path for SQLite and
 * PostgreSQL: timestamps are epoch milliseconds (bigint), booleans are 0/1 integers, structured
 * values are JSON text.
 */

export interface AccountsTable {
  id: string;
  name: string;
  /** JSON array of authorized_keys lines. */
  ssh_keys: string;
  created_at: number;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  name: string;
  scope: 'read' | 'write';
  /** sha256 of the key, hex. The key itself is never stored. */
  hash: string;
  /** First characters of the key, to recognise it in listings. */
  prefix: string;
  rate_limit_exempt: number;
  created_at: number;
  revoked_at: number | null;
  last_used_at: number | null;
}

export interface PodsTable {
  id: string;
  account_id: string;
  name: string;
  status: string;
  /** What the user asked for: RUNNING, EXITED or TERMINATED. The controller drives status toward it. */
  desired_status: string;
  status_reason: string | null;
  image: string;
  args: string;
  disk: number;
  /** JSON array of `<port>/<protocol>`. */
  ports: string;
  /** JSON object, the user's env as returned by GET. */
  env: string;
  /** JSON object, env injected by startSsh/startJupyter; never returned. */
  hidden_env: string;
  registry: string | null;
  gpu_type_id: string | null;
  gpu_count: number;
  /** JSON array of GPU indices on the host. */
  gpu_indices: string;
  cpu_flavor_id: string | null;
  vcpu_count: number;
  memory_gb: number;
  cloud: string;
  data_center_id: string | null;
  host_id: string | null;
  cuda_version: string | null;
  /** JSON: { persistent?: {size,path}, network?: [{volumeId,path}] } */
  mounts: string;
  /** JSON array of { private, public, type }: public ports reserved on the host. */
  port_mappings: string;
  template_id: string | null;
  locked: number;
  global_networking: number;
  global_ip: string | null;
  cost_per_hr: number;
  /** JSON: the placement constraints kept for restarts (cuda rules, dataCenterIds). */
  constraints: string;
  cluster: string | null;
  created_at: number;
  started_at: number | null;
  updated_at: number;
  terminated_at: number | null;
}

export interface PodUsageTable {
  id: string;
  pod_id: string;
  account_id: string;
  cost_per_hr: number;
  started_at: number;
  ended_at: number | null;
}

export interface TemplatesTable {
  id: string;
  /** null for public catalog templates shipped with Gantry. */
  account_id: string | null;
  name: string;
  image: string;
  args: string;
  container_disk_gb: number;
  volume_gb: number;
  volume_mount_path: string | null;
  ports: string;
  env: string;
  registry_id: string | null;
  start_ssh: number;
  start_jupyter: number;
  allowed_cuda_versions: string;
  is_serverless: number;
  is_public: number;
  category: string;
  readme: string;
  created_at: number;
  updated_at: number;
}

export interface NetworkVolumesTable {
  id: string;
  account_id: string;
  name: string;
  size: number;
  data_center_id: string;
  created_at: number;
}

export interface RegistriesTable {
  id: string;
  account_id: string;
  name: string;
  /** AES-256-GCM ciphertexts, base64 (iv.tag.data). */
  username_enc: string;
  password_enc: string;
  created_at: number;
}

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  pods: PodsTable;
  pod_usage: PodUsageTable;
  templates: TemplatesTable;
  network_volumes: NetworkVolumesTable;
  registries: RegistriesTable;
}
