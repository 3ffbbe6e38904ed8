import type { Clock } from '../domain/clock.js';
import type { Db } from '../store/database.js';
import type { SecretBox } from '../store/secret-box.js';

export interface Registry {
  id: string;
  accountId: string;
  name: string;
  createdAt: number;
}

export class RegistriesService {
  constructor(private readonly deps: { db: Db; clock: Clock; secrets: SecretBox }) {}

  /** The caller's registry credential (without secrets), or 404 NOT_FOUND. */
  async get(_accountId: string, _id: string): Promise<Registry> {
    throw new Error('not implemented');
  }

  /** Decrypted credentials, for the runtime only. Never returned by any route or logged. */
  async credentials(_accountId: string, _id: string): Promise<{ username: string; password: string }> {
    throw new Error('not implemented');
  }
}
