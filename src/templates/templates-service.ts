import type { Clock } from '../domain/clock.js';
import type { Db } from '../store/database.js';
import type { Template } from './template.js';

export class TemplatesService {
  constructor(private readonly deps: { db: Db; clock: Clock }) {}

  /**
   * The template a pod create names: the caller's own or a public one.
   * Unknown or another account's → 404 NOT_FOUND; a serverless template → 422 SERVERLESS_TEMPLATE.
   */
  async resolveForPod(_accountId: string, _templateId: string): Promise<Template> {
    throw new Error('not implemented');
  }
}
