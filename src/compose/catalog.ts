import type { Config } from '../config.js';
import type { Clock } from '../domain/clock.js';
import type { EntrypointSupport } from '../domain/start-command.js';
import type { HostFeed } from '../runtime/host-feed.js';
import type { Runtime } from '../runtime/runtime.js';
import type { RegistryGuard } from '../runtime/registry-guard.js';
import { AccountsService } from '../accounts/accounts-service.js';
import { Inventory } from '../inventory/inventory.js';
import { CatalogService } from '../catalog/catalog-service.js';
import { TemplatesService } from '../templates/templates-service.js';
import { VolumesService } from '../volumes/volumes-service.js';
import { BillingService } from '../billing/billing-service.js';
import { RegistriesService } from '../registries/registries-service.js';
import type { Storage } from './storage.js';

export interface CatalogArea {
  accounts: AccountsService;
  inventory: Inventory;
  catalog: CatalogService;
  templates: TemplatesService;
  volumes: VolumesService;
  registries: RegistriesService;
  billing: BillingService;
}

/** Accounts, what can be rented (inventory and catalog), and what pods and workers are made from. */
export function assembleCatalog(
  config: Config,
  { stores, secrets }: Storage,
  parts: {
    clock: Clock;
    runtime: Runtime;
    hosts: HostFeed;
    registryGuard: RegistryGuard | null;
    entrypoints: EntrypointSupport;
  },
): CatalogArea {
  const { clock, runtime, hosts, registryGuard, entrypoints } = parts;
  const accounts = new AccountsService({ store: stores.accounts, clock, quotas: config.quotas });
  const inventory = new Inventory({ hosts, catalog: config.catalog, clock });
  const catalog = new CatalogService({ catalog: config.catalog, inventory });
  const templates = new TemplatesService({
    store: stores.templates,
    registries: stores.registries,
    clock,
    runtime,
    registryGuard,
    entrypoints,
  });
  const volumes = new VolumesService({ store: stores.volumes, clock, runtime, catalog: config.catalog });
  const registries = new RegistriesService({
    store: stores.registries,
    delegations: stores.registryDelegations,
    clock,
    secrets,
  });
  const billing = new BillingService({ store: stores.billing, clock });
  return { accounts, inventory, catalog, templates, volumes, registries, billing };
}
