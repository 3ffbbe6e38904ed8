import type { Config } from './config.js';
import type { EventBus } from './events.js';
import type { Db } from './store/database.js';
import type { TransportServices } from './transport/services.js';
import type { SecretBox } from './store/secret-box.js';
import type { Leases } from './store/leases.js';
import type { NotifyRelay } from './store/notify-relay.js';
import type { PodDeadlineSweep } from './pods/pod-deadline-sweep.js';

/**
 * Everything `createServices` builds: what the transports reach (`TransportServices`), plus the
 * whole config, the database, the event bus, the secret box and the replicas' seams, which only the composition root and tests hold.
 */
export interface Services extends TransportServices {
  config: Config;
  db: Db;
  events: EventBus;
  secrets: SecretBox;
  /** Which replica drives each control loop (always this one on SQLite). */
  leases: Leases;
  /** Wake-ups across replicas (PostgreSQL only). */
  relay: NotifyRelay | null;
  /** Acts on pods' own stop and termination times (started with the pods). */
  podDeadlines: PodDeadlineSweep;
}
