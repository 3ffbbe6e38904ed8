import type { Config } from '../config.js';
import type { Db } from '../store/database.js';
import { systemClock } from '../domain/clock.js';
import { AccountsService } from '../accounts/accounts-service.js';
import { openConfiguredDatabase } from '../main.js';
import { createStores, type Stores } from '../stores.js';

/** Opens the configured store for a one-shot command; safe while a server uses it (WAL / PostgreSQL). */
export async function withStore(
  config: Config,
  fn: (s: { accounts: AccountsService; stores: Stores; db: Db }) => Promise<void>,
): Promise<void> {
  const db = await openConfiguredDatabase(config);
  try {
    const stores = createStores(db);
    await fn({ accounts: new AccountsService({ store: stores.accounts, clock: systemClock }), stores, db });
  } finally {
    await db.close();
  }
}
