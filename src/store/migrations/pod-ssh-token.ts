/**
 * Migration `0012-pod-ssh-token`: what the SSH proxy needs of a pod, in the database so every
 * replica's proxy agrees (docs/ssh.md).
 * - `start_ssh`: whether the pod was created with `startSsh` (only those pods take SSH sessions).
 *   Pods stored before it count as created with it when startSsh injected their `PUBLIC_KEY`.
 * - `ssh_token`: the proxy's routing token (the `username` of `ssh.proxy`): random, unique, not
 *   derived from the pod id. Pods stored before it get one from the database's random source.
 */
export function podSshToken(dialect: 'sqlite' | 'postgres'): string[] {
  const random = dialect === 'sqlite' ? `lower(hex(randomblob(16)))` : `replace(gen_random_uuid()::text, '-', '')`;
  return [
    `ALTER TABLE pods ADD COLUMN start_ssh INTEGER NOT NULL DEFAULT 0`,
    `ALTER TABLE pods ADD COLUMN ssh_token TEXT`,
    `UPDATE pods SET start_ssh = 1 WHERE hidden_env LIKE '%"PUBLIC_KEY"%'`,
    `UPDATE pods SET ssh_token = ${random} WHERE terminated_at IS NULL`,
    `CREATE UNIQUE INDEX pods_ssh_token ON pods (ssh_token)`,
  ];
}
