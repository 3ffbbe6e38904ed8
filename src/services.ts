import type { Config } from './config.js';
import type { EventBus } from './events.js';
import type { Db } from './store/database.js';
import type { TransportServices } from './transport/services.js';

/**
 * Everything `createServices` builds: what the transports reach (`TransportServices`), plus the
 * whole config, the database and the event bus, which only the composition root and tests hold.
 */
export interface Services extends TransportServices {
  config: Config;
  db: Db;
  events: EventBus;
}
