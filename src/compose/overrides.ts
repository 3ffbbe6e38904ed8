import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import type { Host } from '../domain/catalog.js';
import type { Db } from '../store/database.js';
import type { Runtime } from '../runtime/runtime.js';
import type { ResolveAddresses } from '../runtime/registry-guard.js';
import type { RuntimePrepareDeps } from '../runtime/runtime-module.js';

/** What a test (or an embedding program) gives the composition root in place of what it would build. */
export interface ServiceOverrides {
  clock?: Clock;
  logger?: Logger;
  runtime?: Runtime;
  /** The hosts placement uses with an overridden runtime; required with a runtime whose hosts are discovered (docker: its config has no fleet). @default the config's fleet */
  hosts?: Host[];
  /** The runtime's isolation defences (only the isolation tests take one away). @default all on */
  runtimeDefences?: RuntimePrepareDeps['defences'];
  db?: Db;
  /** How the registry policy resolves registry host names (runtime docker). @default the system resolver */
  registryResolver?: ResolveAddresses;
}
