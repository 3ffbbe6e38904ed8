import type { Config } from '../config.js';
import type { Db } from '../store/database.js';
import { systemClock } from '../domain/clock.js';
import { AccountsService } from '../accounts/accounts-service.js';
import { openConfiguredDatabase } from '../main.js';

/** Opens the configured store for a one-shot command; safe while a server uses it (WAL / PostgreSQL). */
export async function withStore(
  config: Config,
  fn: (s: { accounts: AccountsService; db: Db }) => Promise<void>,
): Promise<void> {
  const db = await openConfiguredDatabase(config);
  try {
    await fn({ accounts: new AccountsService({ db, clock: systemClock }), db });
  } finally {
    await db.close();
  }
}
