/**
 * This host's paths in what the engine says, hidden before tenants read it (host-paths.ts): the
 * engines' default folders, and this engine's data root once known. The engine's address (its
 * socket) is the operator's setting and stays in the reasons that say it is unreachable.
 */
import { hideHostPaths } from '../host-paths.js';
import type { DockerClient } from './docker-client.js';

export class EngineHostPaths {
  readonly #client: Pick<DockerClient, 'info'>;
  /** This host's folders hidden besides the engines' defaults: the engine's data root once known. */
  readonly #roots: string[] = [];
  #dataRoot: Promise<void> | null = null;

  constructor(client: Pick<DockerClient, 'info'>) {
    this.#client = client;
  }

  /** What the engine said, without this host's paths (host-paths.ts): for tenants' eyes. */
  hide(text: string): string {
    return hideHostPaths(text, this.#roots);
  }

  /** The engine's data root joins the hidden folders, once (best effort: the defaults and ids still hold). */
  learnDataRoot(): Promise<void> {
    this.#dataRoot ??= this.#client.info().then(
      (info) => {
        const root: unknown = info.DockerRootDir;
        if (typeof root === 'string') this.#roots.push(root);
      },
      () => {
        this.#dataRoot = null;
      },
    );
    return this.#dataRoot;
  }
}
