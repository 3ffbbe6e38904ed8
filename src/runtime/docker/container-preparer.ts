/**
 * Everything a start does before the engine starts the container: it learns the engine's facts
 * once (CPU count, logging driver, whether the storage driver takes a disk size), removes the
 * container a stop kept (the container disk is ephemeral, wiped on every start: spec 2.1 `disk`),
 * admits the image (a private one only for an account that proves it may pull it: image-access.ts),
 * pulls it when missing (never from a registry the policy refuses), makes the volumes and the
 * account's network (instance-networks.ts), and creates the container anew, from the image's
 * canonical name. A container already running with the same spec (a start retried after its
 * answer was lost) is taken as it is.
 */
import type { Logger } from 'pino';
import type { Host } from '../../domain/catalog.js';
import type { RegistryGuard } from '../registry-guard.js';
import type { InstanceSpec } from '../runtime.js';
import { planContainer, type ContainerPlan } from './container-config.js';
import type { DockerClient } from './docker-client.js';
import { LABEL } from './docker-names.js';
import { ImageAccess, type ImageAdmission } from './image-access.js';
import { PreparedImages } from './prepared-images.js';
import { DockerEngineError } from './engine-connection.js';
import type { InstanceNetworks, JoinedNetwork } from './instance-networks.js';
import type { ContainerInspect, EngineInfo } from './engine-types.js';

/** Whether `diskGb` is enforced on this engine, and why not when it is not. */
export interface DiskLimitSupport {
  /** null until the engine has been asked */
  enforced: boolean | null;
  /** in words, for the host record's notes */
  note: string | null;
}

/** What a start found or made: a container already running from this spec, or one to start. */
export type Prepared =
  { kind: 'running'; info: ContainerInspect } | { kind: 'created'; containerId: string; plan: ContainerPlan };

export interface ContainerPreparerOptions {
  client: DockerClient;
  namespace: string;
  host: Host;
  bindIp: string;
  logger: Logger;
  /** the json-file cap, when the engine logs to json-file */
  logMaxBytes: number;
  /** Judges the image's registry before a pull. */
  registryGuard: Pick<RegistryGuard, 'refusal'>;
  /** The account networks instances join; null: the engine's default bridge (a test taking that defence away). */
  networks: InstanceNetworks | null;
  /** Whether containers get the hardening of container-config.ts. */
  hardening: boolean;
  /** Open files per container, until the engine refuses to raise a container's that far. */
  openFilesLimit: number;
}

interface EngineFacts {
  cpus: number;
  logMaxBytes: number | null;
}

export class ContainerPreparer {
  readonly #o: ContainerPreparerOptions;
  readonly #access: ImageAccess;
  /** Images pulled ahead of any start (FlashBoot's pre-pulling). */
  readonly images: PreparedImages;
  #facts: Promise<EngineFacts> | null = null;
  #disk: DiskLimitSupport = { enforced: null, note: null };
  /** null once the engine refused to raise a container's open files that far (its own limit is lower). */
  #openFiles: number | null;

  constructor(options: ContainerPreparerOptions) {
    this.#o = options;
    const { client, logger, registryGuard } = options;
    this.#access = new ImageAccess({ client, logger, registryGuard });
    this.images = new PreparedImages({ client, access: this.#access, namespace: options.namespace });
    this.#openFiles = options.openFilesLimit;
  }

  /**
   * A container could not start because the engine may not raise its open-files limit (the
   * engine's own is lower): from now on containers keep the engine's limit, lower than the one asked.
   */
  openFilesRefused(engineMessage: string): void {
    if (this.#openFiles === null) return;
    this.#o.logger.warn(
      { asked: this.#openFiles },
      `the engine cannot raise a container's open-files limit to ${this.#openFiles} (${engineMessage}): containers keep the engine's own, lower limit`,
    );
    this.#openFiles = null;
  }

  get diskLimit(): DiskLimitSupport {
    return { ...this.#disk };
  }

  async prepare(spec: InstanceSpec): Promise<Prepared> {
    const facts = await this.#engineFacts();
    // Before anything is made for the instance: a refused image leaves nothing behind.
    const admission = await this.#access.admit(spec);
    const { networks } = this.#o;
    if (spec.networkMode === 'host' || !networks) return this.#prepareOn(spec, admission, facts, null);
    try {
      return await networks.join(spec, (joined) => this.#prepareOn(spec, admission, facts, joined));
    } catch (err) {
      if (!(err instanceof NetworkGone)) throw err;
      // Removed behind Gantry's back since it was made here: made again, once.
      networks.forget(err.network);
      return networks.join(spec, (joined) => this.#prepareOn(spec, admission, facts, joined));
    }
  }

  async #prepareOn(
    spec: InstanceSpec,
    admission: ImageAdmission,
    facts: EngineFacts,
    network: JoinedNetwork | null,
  ): Promise<Prepared> {
    const { client, logger } = this.#o;
    let plan = this.#plan(spec, admission, facts, network, this.#disk.enforced !== false);

    for (const volume of plan.volumes) await client.createVolume(volume.name, volume.labels);
    // Create first, as `docker run` does: the common case (no leftover container, image present)
    // costs one engine call (after the admission's lookup); a name in use or a missing image is
    // dealt with when the engine says so.
    for (let attempt = 0; ; attempt++) {
      try {
        const created = await this.#create(spec, admission, plan, facts, network);
        plan = created.plan;
        return { kind: 'created', containerId: created.containerId, plan };
      } catch (err) {
        if (attempt >= 2 || !(err instanceof DockerEngineError)) throw err;
        if (err.statusCode === 409) {
          const kept = await client.inspectContainer(plan.name);
          // Running already: a start retried after its answer was lost.
          if (kept && kept.State.Running && kept.Config.Labels?.[LABEL.spec] === plan.specHash)
            return { kind: 'running', info: kept };
          if (kept) {
            logger.debug(
              { instance: spec.id, container: kept.Id.slice(0, 12) },
              'removing the container the last stop kept: a start begins with a fresh container disk',
            );
            await client.removeContainer(kept.Id, { force: true, volumes: true });
          }
          continue;
        }
        if (network && goneNetwork(err) === network.name) throw new NetworkGone(network.name, err);
        if (err.statusCode === 404 && !(await client.inspectImage(admission.image.ref))) {
          await admission.pullMissing();
          continue;
        }
        throw err;
      }
    }
  }

  /** Creates the container; an engine that refuses a disk size is remembered and asked again without. */
  async #create(
    spec: InstanceSpec,
    admission: ImageAdmission,
    plan: ContainerPlan,
    facts: EngineFacts,
    network: JoinedNetwork | null,
  ): Promise<{ containerId: string; plan: ContainerPlan }> {
    const { client, logger } = this.#o;
    try {
      const created = await admission.create(() => client.createContainer(plan.name, plan.body));
      if (plan.body.HostConfig.StorageOpt && this.#disk.enforced === null) this.#disk = { enforced: true, note: null };
      return { containerId: created.Id, plan };
    } catch (err) {
      if (!(plan.body.HostConfig.StorageOpt && isStorageOptRefusal(err))) throw err;
      this.#disk = {
        enforced: false,
        note: `container disk sizes are not enforced: the engine refused a size limit (${(err as DockerEngineError).engineMessage})`,
      };
      logger.warn(this.#disk.note!);
      const without = this.#plan(spec, admission, facts, network, false);
      return {
        containerId: (await admission.create(() => client.createContainer(without.name, without.body))).Id,
        plan: without,
      };
    }
  }

  #plan(
    spec: InstanceSpec,
    admission: ImageAdmission,
    facts: EngineFacts,
    network: JoinedNetwork | null,
    diskLimit: boolean,
  ): ContainerPlan {
    const { namespace, host, bindIp, hardening } = this.#o;
    const plan = planContainer(spec, {
      namespace,
      host,
      bindIp,
      diskLimit,
      engineCpus: facts.cpus,
      openFiles: this.#openFiles,
      logMaxBytes: facts.logMaxBytes,
      network,
      hardening,
    });
    // The engine is given the canonical name, never the tenant's spelling: a bare name it does not
    // hold would be read as an image ID prefix (image-access.ts). The spec hash stays the one of
    // the tenant's spelling, a function of the same name.
    plan.body.Image = admission.image.ref;
    return plan;
  }

  #engineFacts(): Promise<EngineFacts> {
    this.#facts ??= this.#o.client.info().then(
      (info) => {
        this.#judgeDiskLimit(info);
        return { cpus: info.NCPU, logMaxBytes: info.LoggingDriver === 'json-file' ? this.#o.logMaxBytes : null };
      },
      (err: unknown) => {
        this.#facts = null;
        throw err;
      },
    );
    return this.#facts;
  }

  /** overlay2 takes a size only over xfs mounted with pquota: on anything else, it is not asked for. */
  #judgeDiskLimit(info: EngineInfo): void {
    if (this.#disk.enforced !== null) return;
    const backing = info.DriverStatus?.find(([key]) => key === 'Backing Filesystem')?.[1];
    if (info.Driver === 'overlay2' && backing !== undefined && backing !== 'xfs') {
      this.#disk = {
        enforced: false,
        note: `container disk sizes are not enforced: the engine's storage driver overlay2 on ${backing} takes no size limit (it needs xfs mounted with pquota)`,
      };
      this.#o.logger.warn({ driver: info.Driver, backing }, this.#disk.note!);
    }
  }
}

/** The network an engine error says is gone (`network gantry-… not found`), or null. */
export function goneNetwork(err: unknown): string | null {
  if (!(err instanceof DockerEngineError)) return null;
  return /^network (\S+) not found/.exec(err.engineMessage)?.[1] ?? null;
}

/** The engine no longer has a network this runtime made: it is made again. */
class NetworkGone extends Error {
  constructor(
    readonly network: string,
    cause: DockerEngineError,
  ) {
    super(cause.message, { cause });
  }
}

const isStorageOptRefusal = (err: unknown): boolean =>
  err instanceof DockerEngineError && /storage.?opt|storage option|quota/i.test(err.engineMessage);
