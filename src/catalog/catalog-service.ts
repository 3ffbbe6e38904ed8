import type { Catalog } from '../domain/catalog.js';
import type { Inventory } from '../inventory/inventory.js';

export class CatalogService {
  constructor(private readonly deps: { catalog: Catalog; inventory: Inventory }) {}

  get catalog(): Catalog {
    return this.deps.catalog;
  }
}
