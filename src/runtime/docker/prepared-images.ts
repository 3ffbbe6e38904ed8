/**
 * Images pulled ahead of any start (FlashBoot's pre-pulling: serverless/image-prepull.ts), and the
 * engine's record of them. A pull goes through image-access.ts like a start's: the registry policy
 * judges it, a credentialed pull marks the repository private, and an image the engine already
 * holds of a private repository is "prepared" only for an account that proves it may pull it.
 *
 * The record is one volume per pre-pulled image (`gantry-prepulled-<namespace>-<hash>`, labelled
 * with the image, its size, when it was pulled and for which account), made once the pull is done: only what this
 * installation pulled is ever removed, an image the engine held before (an operator's, a start's)
 * never is, and the record outlives a restart of the server or the agent. A crash between the pull
 * and the record leaves the image unrecorded: kept, never removed by Gantry (an operator's prune
 * takes it), the safe side.
 */
import { createHash } from 'node:crypto';
import { canonicalImage } from '../../domain/image-ref.js';
import type { ImagePreparation, PreparedImage } from '../runtime.js';
import type { DockerClient } from './docker-client.js';
import { LABEL } from './docker-names.js';
import { DockerEngineError } from './engine-connection.js';
import type { ImageAccess } from './image-access.js';

const PREPULLED = 'gantry.prepulled';
const SIZE = 'gantry.prepulled.size';
const AT = 'gantry.prepulled.at';
const ACCOUNT = 'gantry.prepulled.account';

type Client = Pick<
  DockerClient,
  'inspectImage' | 'removeImage' | 'createVolume' | 'removeVolume' | 'listVolumes' | 'listContainers'
>;

export class PreparedImages {
  readonly #client: Client;
  readonly #access: Pick<ImageAccess, 'admit'>;
  readonly #namespace: string;
  readonly #now: () => number;

  constructor(options: { client: Client; access: Pick<ImageAccess, 'admit'>; namespace: string; now?: () => number }) {
    this.#client = options.client;
    this.#access = options.access;
    this.#namespace = options.namespace;
    this.#now = options.now ?? Date.now;
  }

  #volume(image: string): string {
    return `gantry-prepulled-${this.#namespace}-${createHash('sha256').update(image).digest('hex').slice(0, 32)}`;
  }

  async prepare(request: ImagePreparation): Promise<{ pulled: boolean; sizeBytes: number }> {
    const admission = await this.#access.admit({
      id: `pre-pull of ${request.image}`,
      image: request.image,
      registryAuth: request.registryAuth,
      owner: { accountId: request.accountId },
    });
    const ref = admission.image.ref;
    const held = await this.#client.inspectImage(ref);
    if (held) return { pulled: false, sizeBytes: held.Size ?? 0 };
    await admission.pullMissing();
    const pulled = await this.#client.inspectImage(ref);
    if (!pulled) throw new Error(`image "${request.image}" was pulled but the engine does not hold it`);
    const sizeBytes = pulled.Size ?? 0;
    await this.#client.createVolume(this.#volume(ref), {
      [LABEL.namespace]: this.#namespace,
      [PREPULLED]: ref,
      [SIZE]: String(sizeBytes),
      [AT]: String(this.#now()),
      [ACCOUNT]: request.accountId,
    });
    return { pulled: true, sizeBytes };
  }

  async list(): Promise<PreparedImage[]> {
    const volumes = await this.#client.listVolumes({ label: [`${LABEL.namespace}=${this.#namespace}`, PREPULLED] });
    return volumes.flatMap((v) => {
      const image = v.Labels?.[PREPULLED];
      if (!image) return [];
      return [
        {
          image,
          sizeBytes: Number(v.Labels?.[SIZE] ?? 0) || 0,
          pulledAt: Number(v.Labels?.[AT] ?? 0) || 0,
          accountId: v.Labels?.[ACCOUNT] || null,
        },
      ];
    });
  }

  async discard(image: string): Promise<'removed' | 'in-use' | 'absent'> {
    const ref = canonicalImage(image).ref;
    // Any container of it (running or not, anyone's): kept. The engine would only untag an image
    // that has another name, and a start of this name would then pull it again.
    if (await this.#client.inspectImage(ref)) {
      const using = await this.#client.listContainers({ all: true, filters: { ancestor: [ref] } });
      if (using.length > 0) return 'in-use';
    }
    let outcome: 'removed' | 'absent';
    try {
      outcome = (await this.#client.removeImage(ref)) ? 'removed' : 'absent';
    } catch (err) {
      // The engine keeps an image a container (running or not) was made from.
      if (err instanceof DockerEngineError && err.statusCode === 409) return 'in-use';
      throw err;
    }
    await this.#client.removeVolume(this.#volume(ref));
    return outcome;
  }
}
