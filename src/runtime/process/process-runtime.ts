import type { Logger } from 'pino';
import type { ImageSpec } from '../../config.js';
import type { Clock } from '../../domain/clock.js';
import type { InstanceListener, InstanceSpec, InstanceStatus, Runtime } from '../runtime.js';

export interface ProcessRuntimeOptions {
  images: Record<string, ImageSpec>;
  /** instance scratch folders go under `<dataDir>/instances/<id>` */
  dataDir: string;
  clock: Clock;
  logger: Logger;
  /** SIGTERM → SIGKILL grace. @default 5000 */
  stopGraceMs: number;
}

export class ProcessRuntime implements Runtime {
  readonly name = 'process';
  constructor(private readonly options: ProcessRuntimeOptions) {}
  async start(_spec: InstanceSpec): Promise<InstanceStatus> {
    throw new Error('not implemented');
  }
  async stop(_id: string): Promise<void> {}
  async inspect(_id: string): Promise<InstanceStatus | null> {
    return null;
  }
  async list(): Promise<InstanceStatus[]> {
    return [];
  }
  onChange(_listener: InstanceListener): () => void {
    return () => {};
  }
  async close(): Promise<void> {}
}
