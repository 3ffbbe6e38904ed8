import type { Clock } from '../domain/clock.js';
import { ApiError, notFound, validationFailed } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { RegistryStore, RegistryRecord } from '../store/registry-store.js';
import type { SecretBox } from '../store/secret-box.js';
import type { Registry } from '../domain/registry.js';

export type { Registry } from '../domain/registry.js';

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

  constructor(private readonly deps: { store: RegistryStore; clock: Clock; secrets: SecretBox }) {
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

  async #record(accountId: string, id: string): Promise<RegistryRecord> {
    const record = await this.store.get(accountId, id);
    if (!record) throw notFound('registry credential', id);
    return record;
  }
}
