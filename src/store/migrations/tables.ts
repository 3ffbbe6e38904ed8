/**
 * The DDL of the first migration, written once with the two dialects' type names as parameters.
 * Later migrations live in a file each, listed once in `index.ts` with the step of each dialect.
 */
export interface DialectTypes {
  /** epoch-millisecond timestamps and other 64-bit integers */
  big: string;
  real: string;
}

export const initialTables = ({ big, real }: DialectTypes): string[] => [
  `CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    ssh_keys TEXT NOT NULL DEFAULT '[]',
    created_at ${big} NOT NULL
  )`,
  `CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,
    scope TEXT NOT NULL,
    hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    rate_limit_exempt INTEGER NOT NULL DEFAULT 0,
    created_at ${big} NOT NULL,
    revoked_at ${big},
    last_used_at ${big}
  )`,
  `CREATE INDEX api_keys_account ON api_keys(account_id)`,
  `CREATE TABLE pods (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    desired_status TEXT NOT NULL,
    status_reason TEXT,
    image TEXT NOT NULL,
    args TEXT NOT NULL DEFAULT '',
    disk INTEGER NOT NULL,
    ports TEXT NOT NULL DEFAULT '[]',
    env TEXT NOT NULL DEFAULT '{}',
    hidden_env TEXT NOT NULL DEFAULT '{}',
    registry TEXT,
    gpu_type_id TEXT,
    gpu_count INTEGER NOT NULL DEFAULT 0,
    gpu_indices TEXT NOT NULL DEFAULT '[]',
    cpu_flavor_id TEXT,
    vcpu_count INTEGER NOT NULL DEFAULT 0,
    memory_gb INTEGER NOT NULL DEFAULT 0,
    cloud TEXT NOT NULL,
    data_center_id TEXT,
    host_id TEXT,
    cuda_version TEXT,
    mounts TEXT NOT NULL DEFAULT '{}',
    port_mappings TEXT NOT NULL DEFAULT '[]',
    template_id TEXT,
    locked INTEGER NOT NULL DEFAULT 0,
    global_networking INTEGER NOT NULL DEFAULT 0,
    global_ip TEXT,
    cost_per_hr ${real} NOT NULL DEFAULT 0,
    constraints TEXT NOT NULL DEFAULT '{}',
    cluster TEXT,
    created_at ${big} NOT NULL,
    started_at ${big},
    updated_at ${big} NOT NULL,
    terminated_at ${big}
  )`,
  `CREATE INDEX pods_account ON pods(account_id, created_at)`,
  // Pods not yet terminated, for the controller's sweeps. Keyed on terminated_at (written once,
  // at termination) rather than status, so status changes leave this index alone.
  `CREATE INDEX pods_live ON pods(created_at) WHERE terminated_at IS NULL`,
  `CREATE TABLE pod_usage (
    id TEXT PRIMARY KEY,
    pod_id TEXT NOT NULL,
    account_id TEXT NOT NULL,
    cost_per_hr ${real} NOT NULL,
    started_at ${big} NOT NULL,
    ended_at ${big}
  )`,
  `CREATE INDEX pod_usage_pod ON pod_usage(pod_id)`,
  `CREATE INDEX pod_usage_account ON pod_usage(account_id, started_at)`,
  `CREATE TABLE templates (
    id TEXT PRIMARY KEY,
    account_id TEXT REFERENCES accounts(id),
    name TEXT NOT NULL,
    image TEXT NOT NULL,
    args TEXT NOT NULL DEFAULT '',
    container_disk_gb INTEGER NOT NULL,
    volume_gb INTEGER NOT NULL DEFAULT 0,
    volume_mount_path TEXT,
    ports TEXT NOT NULL DEFAULT '[]',
    env TEXT NOT NULL DEFAULT '{}',
    registry_id TEXT,
    start_ssh INTEGER NOT NULL DEFAULT 0,
    start_jupyter INTEGER NOT NULL DEFAULT 0,
    allowed_cuda_versions TEXT NOT NULL DEFAULT '[]',
    is_serverless INTEGER NOT NULL DEFAULT 0,
    is_public INTEGER NOT NULL DEFAULT 0,
    category TEXT NOT NULL DEFAULT 'NVIDIA',
    readme TEXT NOT NULL DEFAULT '',
    created_at ${big} NOT NULL,
    updated_at ${big} NOT NULL
  )`,
  `CREATE INDEX templates_account ON templates(account_id)`,
  `CREATE TABLE network_volumes (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,
    size INTEGER NOT NULL,
    data_center_id TEXT NOT NULL,
    created_at ${big} NOT NULL
  )`,
  `CREATE INDEX network_volumes_account ON network_volumes(account_id)`,
  `CREATE TABLE registries (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,
    username_enc TEXT NOT NULL,
    password_enc TEXT NOT NULL,
    created_at ${big} NOT NULL
  )`,
  `CREATE INDEX registries_account ON registries(account_id)`,
];
