import { parseArgs, configFrom, storeOptions, UsageError } from './args.js';
import { newId } from '../domain/ids.js';
import { exportLines, workerEnvironment } from '../serverless/worker-env.js';
import { withStore } from './with-store.js';

export const workerHelp = `gantry worker env ENDPOINT [--url URL] [--gpu TYPE] [--data-dir DIR] [--config FILE]
                                prints export lines that attach a worker to ENDPOINT by hand:
                                eval "$(gantry worker env ep123)" && python handler.py
                                (creates a key named "worker ENDPOINT" on each call, in the worker
                                scope: it calls only ENDPOINT's worker protocol, for any worker id;
                                revoked with the endpoint, or by gantry keys revoke)`;

/** `gantry worker env`: the worker-protocol environment for a worker attached by hand. */
export async function worker(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { ...storeOptions, url: { type: 'string' }, gpu: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) return void console.log(workerHelp);
  const [sub, endpointId] = positionals;
  if (sub !== 'env' || !endpointId) throw new UsageError(workerHelp);
  const config = configFrom(values);
  await withStore(config, async ({ accounts, db }) => {
    const endpoint = await db.kysely
      .selectFrom('endpoints')
      .select(['id', 'account_id', 'gpu_ids'])
      .where('id', '=', endpointId)
      .executeTakeFirst();
    if (!endpoint)
      throw new UsageError(
        `no serverless endpoint "${endpointId}" in this data folder (${config.databaseUrl ? 'database' : config.dataDir})`,
      );
    // Not the account's write key: the worker's code (and its environment) can read this one.
    const { key } = await accounts.createKey(endpoint.account_id, {
      scope: 'worker',
      endpointId: endpoint.id,
      name: `worker ${endpoint.id}`,
    });
    const pool = endpoint.gpu_ids
      .split(',')
      .map((s) => s.trim())
      .find(Boolean);
    const gpuType = values.gpu ?? config.catalog.gpuTypes.find((g) => g.pool === pool)?.id ?? 'CPU';
    const env = workerEnvironment({
      publicUrl: values.url ?? config.server.publicJobUrl,
      endpointId: endpoint.id,
      workerId: `local-${newId(12)}`,
      apiKey: key,
      gpuType,
      pingIntervalMs: config.jobs.pingIntervalMs,
    });
    console.log(exportLines(env));
  });
}
