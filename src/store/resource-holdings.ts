import { sql } from 'kysely';
import type { DesiredStatus } from '../domain/pod-state.js';
import type { ResourceHoldings } from '../domain/quotas.js';
import type { Db, Executor } from './database.js';

/**
 * What an account holds that the resource quotas count, read from the rows every replica shares:
 * its pods that are not TERMINATED, and the GPUs of those meant to run (a stopped pod keeps its
 * machine assignment but releases its GPUs: `start` reserves them again) and of the serverless
 * workers the autoscaler launched for its endpoints (rows with a host, not dead).
 */
export class ResourceHoldingsStore {
  constructor(private readonly db: Db) {}

  async holdings(accountId: string, tx: Executor = this.db.kysely): Promise<ResourceHoldings> {
    const pods = await tx
      .selectFrom('pods')
      .select([
        (eb) => eb.fn.countAll<number>().as('pods'),
        sql<number>`coalesce(sum(CASE WHEN desired_status = ${sql.lit<DesiredStatus>('RUNNING')} THEN gpu_count ELSE 0 END), 0)`.as(
          'gpus',
        ),
      ])
      .where('account_id', '=', accountId)
      .where('status', '<>', 'TERMINATED')
      .executeTakeFirst();
    const workers = await tx
      .selectFrom('workers')
      .innerJoin('endpoints', 'endpoints.id', 'workers.endpoint_id')
      .select(sql<number>`coalesce(sum(endpoints.gpu_count), 0)`.as('gpus'))
      .where('endpoints.account_id', '=', accountId)
      .where('workers.host_id', 'is not', null)
      .where('workers.status', '<>', 'dead')
      .executeTakeFirst();
    return { pods: Number(pods?.pods ?? 0), gpus: Number(pods?.gpus ?? 0) + Number(workers?.gpus ?? 0) };
  }
}
