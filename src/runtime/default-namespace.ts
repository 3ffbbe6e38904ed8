import { createHash } from 'node:crypto';

/**
 * The installation's default namespace: a hash of what identifies its data, so it is stable across
 * restarts and replicas, and differs between installations. A PostgreSQL URL counts without its
 * credentials (a rotated password must not orphan every container).
 */
export function defaultNamespace(databaseUrl: string | null, databaseSchema: string, dataDir: string): string {
  let identity = `dir:${dataDir}`;
  if (databaseUrl) {
    const url = new URL(databaseUrl);
    identity = `pg:${url.hostname}:${url.port || '5432'}${url.pathname}#${databaseSchema}`;
  }
  return createHash('sha256').update(identity).digest('hex').slice(0, 12);
}
