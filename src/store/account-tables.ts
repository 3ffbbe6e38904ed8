/** The tables of accounts, their API keys and the image registries they register. Conventions: `schema.ts`. */

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
  scope: KeyScope;
  /** sha256 of the key, hex. The key itself is never stored. */
  hash: string;
  /** First characters of the key, to recognise it in listings. */
  prefix: string;
  rate_limit_exempt: number;
  created_at: number;
  revoked_at: number | null;
  last_used_at: number | null;
  /** A `worker` key's endpoint: the only one whose worker protocol it may call (migration 0005). */
  endpoint_id: string | null;
  /** A `worker` key's worker id, when it is bound to one worker (keys of launched workers). */
  worker_id: string | null;
}

/**
 * What a key may do: `read`, `write`, or `worker` — only the worker protocol of one endpoint (and
 * of one worker id, when bound to one).
 */
export type KeyScope = 'read' | 'write' | 'worker';

export interface RegistriesTable {
  id: string;
  account_id: string;
  name: string;
  /** AES-256-GCM ciphertexts, base64 (iv.tag.data). */
  username_enc: string;
  password_enc: string;
  created_at: number;
}

/** An ECR delegation an account registered (migration 0015). */
export interface RegistryDelegationsTable {
  id: string;
  account_id: string;
  name: string | null;
  /** The 12-digit AWS account id that owns the repository. */
  aws_account: string;
  aws_region: string;
  repository: string;
  tag: string;
  /** The ARN's partition: `aws`, `aws-cn` or `aws-us-gov`. */
  aws_partition: string;
  created_at: number;
}
