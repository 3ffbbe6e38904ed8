/**
 * Who may run an image the engine already holds. The engine shares its images between everyone
 * who creates containers on it: without this, an image one account pulled with its registry
 * credential would run for any other account that names it, no credential asked.
 *
 * The rule:
 * - a repository is **private** on an engine once an image of it was pulled there with a registry
 *   credential (recorded on the engine before that pull: private-image-ledger.ts), and stays so
 *   until its registry gives an image of it to an account that sent no credential (anyone may
 *   pull it: it is public, and the record is dropped). Registries grant pulls per repository, so
 *   every tag and digest of a private repository is private. A credentialed pull the engine
 *   refuses drops the record it made when the engine holds nothing of the repository and no other
 *   pull of it is under way here (names a tenant tries leave nothing behind); the pull that
 *   succeeds records it again once done, in case another process dropped it meanwhile;
 * - before every container create of an image of a private repository, the instance's account
 *   proves it may pull it: the engine asks the registry for the image's manifest, by tag or by
 *   digest as the reference names it, with the instance's own credential (or none) — one manifest
 *   request, no download, no local tag moved (`GET /distribution/{name}/json`; a pull would not
 *   do: the engine "pulls" an image it holds by digest without asking the registry). A refusal, or
 *   a registry that cannot be reached, fails the start with the reason before the container is
 *   created (fail closed: whether the account may pull cannot be known then, and a private image
 *   once running cannot be taken back);
 * - images of other repositories (public ones, and images the operator loaded) are created from
 *   the engine's copy, as before: one engine call (the record's lookup) is all this adds.
 *
 * References by image ID are refused (domain/image-ref.ts `imageIdProblem`), and the engine is only
 * ever given canonical names, which it never reads as ID prefixes.
 *
 * Within one process the check and the create cannot be overtaken by a credentialed pull of the
 * same repository: the pull records the repository in memory first, then waits for the creates of
 * that repository already under way. Processes sharing an engine see each other's records on the
 * engine; between two of them, a create whose lookup came just before another's record can still
 * meet that other's pull finished (the lookup and the create are one engine round trip apart).
 */
import type { Logger } from 'pino';
import { canonicalImage, imageIdProblem, type CanonicalImage } from '../../domain/image-ref.js';
import type { RegistryGuard } from '../registry-guard.js';
import type { InstanceOwner, InstanceSpec } from '../runtime.js';
import type { DockerClient } from './docker-client.js';
import { DockerEngineError, isUnreachable } from './engine-connection.js';
import { PrivateImageLedger } from './private-image-ledger.js';

export interface ImageAccessOptions {
  client: Pick<
    DockerClient,
    'pullImage' | 'inspectDistribution' | 'listImages' | 'inspectVolume' | 'createVolume' | 'removeVolume'
  >;
  logger: Logger;
  /** Judges the image's registry before any pull. */
  registryGuard: Pick<RegistryGuard, 'refusal'>;
}

/** What the rule reads of an instance's spec (a pre-pull names no instance: serverless/image-prepull.ts). */
export type ImageRequest = Pick<InstanceSpec, 'id' | 'image' | 'registryAuth'> & {
  owner: Pick<InstanceOwner, 'accountId'>;
};

/** One start's passage through the rule: its creates and its pull of a missing image go through it. */
export interface ImageAdmission {
  /** the reference the engine is given */
  readonly image: CanonicalImage;
  /** Runs a create of the container (nothing may be awaited before it sends it). */
  create<T>(send: () => Promise<T>): Promise<T>;
  /** Pulls the image the engine does not have, with the instance's credential. */
  pullMissing(): Promise<void>;
}

export class ImageAccess {
  readonly #o: ImageAccessOptions;
  readonly #ledger: PrivateImageLedger;
  /** Repositories this process recorded as private (the engine holds the record that lasts). */
  readonly #marked = new Set<string>();
  /** Creates under way, per repository: a credentialed pull of it waits for them. */
  readonly #creating = new Map<string, Set<Promise<unknown>>>();
  /** Credentialed pulls under way, per repository. */
  readonly #pulling = new Map<string, number>();

  constructor(options: ImageAccessOptions) {
    this.#o = options;
    this.#ledger = new PrivateImageLedger(options.client);
  }

  /**
   * Admits `spec`'s image for a create: refuses a reference by image ID, and proves the account's
   * access when the image's repository is private. Rejects with the reason a user can act on.
   */
  async admit(spec: ImageRequest): Promise<ImageAdmission> {
    const byId = imageIdProblem(spec.image);
    if (byId !== null) throw new Error(`cannot start image "${spec.image}": ${byId}`);
    const image = canonicalImage(spec.image);
    let proven = false;
    if (await this.#ledger.isPrivate(image.repository)) {
      await this.#prove(spec, image);
      proven = true;
    }
    return {
      image,
      create: async (send) => {
        // Recorded here since the lookup (a credentialed pull began meanwhile): proven first, all the same.
        if (!proven && this.#marked.has(image.repository)) {
          await this.#prove(spec, image);
          proven = true;
        }
        return this.#track(image.repository, send());
      },
      pullMissing: () => this.#pullMissing(spec, image),
    };
  }

  async #track<T>(repository: string, creating: Promise<T>): Promise<T> {
    let under = this.#creating.get(repository);
    if (!under) this.#creating.set(repository, (under = new Set()));
    under.add(creating);
    try {
      return await creating;
    } finally {
      under.delete(creating);
      if (under.size === 0 && this.#creating.get(repository) === under) this.#creating.delete(repository);
    }
  }

  async #pullMissing(spec: ImageRequest, image: CanonicalImage): Promise<void> {
    await this.#allowed(spec, 'pulling');
    if (!spec.registryAuth) return this.#pull(spec, image);
    const { repository } = image;
    // Recorded before the pull, and in memory before anything is awaited: no create of this
    // repository that has not seen the record can meet the pulled image.
    this.#marked.add(repository);
    this.#pulling.set(repository, (this.#pulling.get(repository) ?? 0) + 1);
    try {
      await this.#ledger.mark(repository);
      await Promise.allSettled([...(this.#creating.get(repository) ?? [])]);
      await this.#pull(spec, image);
      // Again once pulled: another process's failed pull of this repository may have dropped it meanwhile.
      await this.#ledger.mark(repository);
    } catch (err) {
      // The engine refused the pull: a record of a repository it holds nothing of is not kept (each
      // name a tenant tries would leave one). A pull that broke off (the engine may finish it) keeps it.
      if (err instanceof DockerEngineError)
        await this.#dropIfUnused(repository).catch((dropErr: unknown) =>
          this.#o.logger.warn(
            { err: dropErr, repository },
            'cannot drop the record of a repository nothing was pulled of',
          ),
        );
      throw err;
    } finally {
      const left = (this.#pulling.get(repository) ?? 1) - 1;
      if (left === 0) this.#pulling.delete(repository);
      else this.#pulling.set(repository, left);
    }
  }

  /** Drops the record of `repository` unless another pull of it is under way here or the engine holds an image of it. */
  async #dropIfUnused(repository: string): Promise<void> {
    if ((this.#pulling.get(repository) ?? 0) > 1) return;
    const images = await this.#o.client.listImages();
    const held = images.some((i) =>
      [...(i.RepoTags ?? []), ...(i.RepoDigests ?? [])].some((ref) => canonicalImage(ref).repository === repository),
    );
    if (held || (this.#pulling.get(repository) ?? 0) > 1) return;
    this.#marked.delete(repository);
    await this.#ledger.forget(repository);
  }

  async #prove(spec: ImageRequest, image: CanonicalImage): Promise<void> {
    const { logger } = this.#o;
    const credential = spec.registryAuth ? "the instance's registry credential" : 'no registry credential';
    try {
      await this.#askRegistry(spec, image);
    } catch (err) {
      if (isUnreachable(err)) throw err;
      logger.warn(
        {
          instance: spec.id,
          account: spec.owner.accountId,
          image: image.ref,
          withCredential: Boolean(spec.registryAuth),
        },
        'refused to run a private image: the account did not prove it can pull it',
      );
      const fix = spec.registryAuth
        ? 'Check that the registry credential the pod (or the endpoint’s template) names can pull it'
        : 'Give the pod (or the endpoint’s template) a registry credential that can pull it';
      throw new Error(
        `image "${spec.image}" is private on this host (an image of its repository was pulled here with a registry credential), so it runs only for an account that proves it can pull it, checked against the registry before every start (a registry that cannot be reached refuses it too). Asking the registry for it with ${credential} failed: ${err instanceof DockerEngineError ? err.engineMessage : (err as Error).message}. ${fix}`,
        { cause: err },
      );
    }
    if (spec.registryAuth) {
      logger.info(
        { instance: spec.id, account: spec.owner.accountId, image: image.ref },
        'private image: access proven',
      );
      return;
    }
    // Given with no credential: anyone may pull it, so it is not private after all.
    this.#marked.delete(image.repository);
    await this.#ledger.forget(image.repository);
    logger.info(
      { repository: image.repository },
      'the registry gives a repository recorded as private without a credential: now public',
    );
  }

  /**
   * The registry's own answer for the image, with the instance's credential: a pull would not do,
   * since the engine "pulls" an image it holds by digest without asking the registry at all.
   */
  async #askRegistry(spec: ImageRequest, image: CanonicalImage): Promise<void> {
    await this.#allowed(spec, 'asking the registry for');
    await this.#o.client.inspectDistribution(image.ref, spec.registryAuth ?? null);
  }

  /**
   * Whatever reached the start (a record stored before the policy, or under a looser one): the
   * engine is never made to contact a registry the policy refuses.
   */
  async #allowed(spec: ImageRequest, doing: 'pulling' | 'asking the registry for'): Promise<void> {
    const refusal = await this.#o.registryGuard.refusal(spec.image);
    if (refusal === null) return;
    this.#o.logger.warn({ instance: spec.id, image: spec.image }, 'refused: the registry policy refuses the image');
    throw new Error(`${doing} image "${spec.image}": refused: ${refusal}`);
  }

  /** Pulls the image (its registry already judged by {@link #allowed}). */
  async #pull(spec: ImageRequest, image: CanonicalImage): Promise<void> {
    const { client, logger } = this.#o;
    logger.info({ instance: spec.id, image: image.ref, withCredential: Boolean(spec.registryAuth) }, 'pulling image');
    await client.pullImage(image.ref, {
      auth: spec.registryAuth ?? null,
      onProgress: (m) => {
        if (!m.progress) logger.debug({ image: image.ref, status: m.status, layer: m.id }, 'pull progress');
      },
    });
    logger.info({ image: image.ref }, 'image pulled');
  }
}
