import type { Clock } from '../domain/clock.js';
import type { Db } from '../store/database.js';

export interface NetworkVolume {
  id: string;
  accountId: string;
  name: string;
  size: number;
  dataCenterId: string;
  createdAt: number;
}

export class VolumesService {
  constructor(private readonly deps: { db: Db; clock: Clock; dataDir: string }) {}

  /** The caller's volume, or 404 NOT_FOUND. */
  async get(_accountId: string, _id: string): Promise<NetworkVolume> {
    throw new Error('not implemented');
  }

  /** Folder on this machine that holds the volume's data (created on volume create). */
  hostPath(id: string): string {
    return `${this.deps.dataDir}/volumes/${id}`;
  }
}
