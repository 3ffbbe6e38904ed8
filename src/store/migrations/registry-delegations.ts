/**
 * Migration `0015-registry-delegations`: the ECR delegations an account registers
 * (`/v2/registries/delegations`). A delegation is a record the account keeps: the repository's
 * AWS account, region, name and tag, parsed from the ECR resource ARN when it was created.
 *
 * Index ↔ query map: `registry_delegations_account` serves the list (an account's delegations in
 * creation order) and the scoped delete (id and account).
 */
export function registryDelegationsTable(dialect: 'sqlite' | 'postgres'): string[] {
  const big = dialect === 'postgres' ? 'BIGINT' : 'INTEGER';
  return [
    `CREATE TABLE registry_delegations (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL REFERENCES accounts(id),
      name TEXT,
      aws_account TEXT NOT NULL,
      aws_region TEXT NOT NULL,
      repository TEXT NOT NULL,
      tag TEXT NOT NULL,
      aws_partition TEXT NOT NULL,
      created_at ${big} NOT NULL
    )`,
    `CREATE INDEX registry_delegations_account ON registry_delegations(account_id, created_at)`,
  ];
}
