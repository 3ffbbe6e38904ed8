import type { Clock } from '../domain/clock.js';
import { ApiError, notFound, validationFailed } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { RegistryStore, RegistryRecord } from '../store/registry-store.js';
import type { RegistryDelegationStore } from '../store/registry-delegation-store.js';
import type { RegistryDelegation } from '../domain/registry-delegation.js';
import type { SecretBox } from '../store/secret-box.js';
import type { Registry } from '../domain/registry.js';

export type { Registry } from '../domain/registry.js';
export type { RegistryDelegation } from '../domain/registry-delegation.js';

export interface CreateDelegationInput {
  /** ECR resource ARN: `arn:aws:ecr:<region>:<account>:repository/<name>[:<tag>]`. */
  resource: string;
  name?: string | null;
}

/** ECR repository names (AWS's rule), optionally followed by `:<tag>` (Docker's tag rule). */
const ECR_ARN =
  /^arn:(aws|aws-cn|aws-us-gov):ecr:([a-z]{2}(?:-[a-z]+)+-\d{1,2}):(\d{12}):repository\/((?:[a-z0-9]+(?:[._-][a-z0-9]+)*\/)*[a-z0-9]+(?:[._-][a-z0-9]+)*)(?::([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?$/;
const MAX_REPOSITORY = 256;

/** The tag a delegation names when its ARN names none: Docker's default. */
const DEFAULT_DELEGATION_TAG = 'latest';

/** The parts of an ECR resource ARN, or null when it is not one. */
function parseEcrArn(
  resource: string,
): Pick<RegistryDelegation, 'awsPartition' | 'awsRegion' | 'awsAccount' | 'repository' | 'tag'> | null {
  const m = ECR_ARN.exec(resource);
  if (!m || m[4]!.length < 2 || m[4]!.length > MAX_REPOSITORY) return null;
  return {
    awsPartition: m[1]!,
    awsRegion: m[2]!,
    awsAccount: m[3]!,
    repository: m[4]!,
    tag: m[5] ?? DEFAULT_DELEGATION_TAG,
  };
}

/** The registry host Docker logs in to for the delegation's repository. */
export const dockerRegistryUri = (d: Pick<RegistryDelegation, 'awsAccount' | 'awsRegion' | 'awsPartition'>): string =>
  `${d.awsAccount}.dkr.ecr.${d.awsRegion}.amazonaws.com${d.awsPartition === 'aws-cn' ? '.cn' : ''}`;

export interface CreateRegistryInput {
  name: string;
  username: string;
  password: string;
}

export interface UpdateRegistryInput {
  username: string;
  password: string;
}

/** The REST schema's bounds, applied here too for callers without one (GraphQL). Never quotes the values. */
const MAX_USERNAME = 1024;
const MAX_PASSWORD = 16384;
function checkSecrets({ username, password }: UpdateRegistryInput): void {
  const errors = [
    ...(typeof username !== 'string' || username.length === 0
      ? ['username: is required']
      : username.length > MAX_USERNAME
        ? [`username: must be at most ${MAX_USERNAME} characters`]
        : []),
    ...(typeof password !== 'string' || password.length === 0
      ? ['password: is required']
      : password.length > MAX_PASSWORD
        ? [`password: must be at most ${MAX_PASSWORD} characters`]
        : []),
  ];
  if (errors.length > 0) throw validationFailed(errors);
}

/** Strips the sealed secrets: nothing outside this service sees even the ciphertext. */
const toRegistry = ({ id, accountId, name, createdAt }: RegistryRecord): Registry => ({
  id,
  accountId,
  name,
  createdAt,
});

/** Container registry credentials. Username and password are sealed at rest and leave only through `credentials`. */
export class RegistriesService {
  readonly store: RegistryStore;

  constructor(
    private readonly deps: {
      store: RegistryStore;
      delegations: RegistryDelegationStore;
      clock: Clock;
      secrets: SecretBox;
    },
  ) {
    this.store = deps.store;
  }

  async create(accountId: string, input: CreateRegistryInput): Promise<Registry> {
    checkSecrets(input);
    const record: RegistryRecord = {
      id: newId(),
      accountId,
      name: input.name,
      usernameSealed: this.deps.secrets.seal(input.username),
      passwordSealed: this.deps.secrets.seal(input.password),
      createdAt: this.deps.clock.now(),
    };
    await this.store.insert(record);
    return toRegistry(record);
  }

  async list(accountId: string): Promise<Registry[]> {
    return (await this.store.list(accountId)).map(toRegistry);
  }

  /** The caller's registry credential (without secrets), or 404 NOT_FOUND. */
  async get(accountId: string, id: string): Promise<Registry> {
    return toRegistry(await this.#record(accountId, id));
  }

  /** Decrypted credentials, for the runtime only. Never returned by any route or logged. */
  async credentials(accountId: string, id: string): Promise<{ username: string; password: string }> {
    const record = await this.#record(accountId, id);
    return {
      username: this.deps.secrets.open(record.usernameSealed),
      password: this.deps.secrets.open(record.passwordSealed),
    };
  }

  /**
   * Replaces the username and password (sealed afresh; pods started later pull with them). Another
   * account's or an unknown credential is 404 NOT_FOUND. Answers the credential without secrets.
   */
  async update(accountId: string, id: string, input: UpdateRegistryInput): Promise<Registry> {
    const record = await this.#record(accountId, id);
    checkSecrets(input);
    const sealed = {
      usernameSealed: this.deps.secrets.seal(input.username),
      passwordSealed: this.deps.secrets.seal(input.password),
    };
    if (!(await this.store.updateSecrets(accountId, id, sealed))) throw notFound('registry credential', id);
    return toRegistry(record);
  }

  /** Refused with 400 REGISTRY_IN_USE while a live pod or a template of the account names it. */
  async delete(accountId: string, id: string): Promise<void> {
    await this.#record(accountId, id);
    const usage = await this.store.usage(accountId, id);
    const users = [...usage.pods.map((p) => `pod "${p}"`), ...usage.templates.map((t) => `template "${t}"`)];
    if (users.length > 0)
      throw new ApiError(
        'REGISTRY_IN_USE',
        `Registry credential "${id}" is used by ${users.join(', ')}; terminate those pods and point those templates elsewhere before deleting it.`,
      );
    if (!(await this.store.delete(id))) throw notFound('registry credential', id);
  }

  /**
   * Registers an ECR delegation: a record the account keeps of a repository it delegates. Gantry
   * calls no AWS API; a resource that is not an ECR repository ARN is 422 naming `resource`.
   */
  async createDelegation(accountId: string, input: CreateDelegationInput): Promise<RegistryDelegation> {
    const resource = typeof input.resource === 'string' ? input.resource.trim() : '';
    const parsed = parseEcrArn(resource);
    if (!parsed)
      throw validationFailed([
        'resource: must be an ECR repository ARN, arn:aws:ecr:<region>:<12-digit account>:repository/<name>[:<tag>]',
      ]);
    const delegation: RegistryDelegation = {
      id: newId(),
      accountId,
      name: input.name ?? null,
      ...parsed,
      createdAt: this.deps.clock.now(),
    };
    await this.deps.delegations.insert(delegation);
    return delegation;
  }

  async listDelegations(accountId: string): Promise<RegistryDelegation[]> {
    return this.deps.delegations.list(accountId);
  }

  /** Revokes (deletes) the account's delegation; another account's or an unknown id is 404 NOT_FOUND. */
  async revokeDelegation(accountId: string, id: string): Promise<void> {
    if (!(await this.deps.delegations.delete(accountId, id))) throw notFound('ECR delegation', id);
  }

  async #record(accountId: string, id: string): Promise<RegistryRecord> {
    const record = await this.store.get(accountId, id);
    if (!record) throw notFound('registry credential', id);
    return record;
  }
}
