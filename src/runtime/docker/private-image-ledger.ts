/**
 * The engine's record of which repositories it holds images of that were pulled with a registry
 * credential ("private" repositories: image-access.ts). One volume per repository, named after a
 * hash of it (`gantry-private-image-<40 hex>`) and labelled with it (`gantry.private-image`), made
 * *before* the pull it records.
 *
 * Why on the engine, and why a volume:
 * - images are the engine's, not an installation's: every Gantry process driving the engine (a
 *   restarted server or agent, another installation sharing it under another namespace) must
 *   see the same record, so it is not namespaced and not held in one process's memory;
 * - a volume can be made before the image exists, so no crash between a pull and its record
 *   leaves a private image unrecorded; it is one cheap call to make, to look up by name, to drop;
 * - it lives as long as the engine's volumes, which on a Gantry host also hold stopped pods'
 *   persistent volumes and network volumes: pruning volumes there loses tenants' data too.
 */
import { createHash } from 'node:crypto';
import type { DockerClient } from './docker-client.js';
import { LABEL } from './docker-names.js';

/** The volume that records `repository` (canonical: domain/image-ref.ts) as private. */
export const privateImageVolumeName = (repository: string): string =>
  `gantry-private-image-${createHash('sha256').update(repository).digest('hex').slice(0, 40)}`;

export class PrivateImageLedger {
  readonly #client: Pick<DockerClient, 'inspectVolume' | 'createVolume' | 'removeVolume'>;

  constructor(client: Pick<DockerClient, 'inspectVolume' | 'createVolume' | 'removeVolume'>) {
    this.#client = client;
  }

  /** Whether an image of `repository` was pulled on this engine with a credential (one engine call). */
  async isPrivate(repository: string): Promise<boolean> {
    return (await this.#client.inspectVolume(privateImageVolumeName(repository))) !== null;
  }

  /** Records `repository` as private; recording it again changes nothing. */
  async mark(repository: string): Promise<void> {
    await this.#client.createVolume(privateImageVolumeName(repository), { [LABEL.privateImage]: repository });
  }

  /** Drops the record (its repository proved public: pulled without a credential). */
  async forget(repository: string): Promise<void> {
    await this.#client.removeVolume(privateImageVolumeName(repository));
  }
}
