/**
 * How many of the agent's downloads are served at once (`fleet.downloads`), per client address
 * and in all. The executable is public, as a join needs it before the host has any credential,
 * and it is about 95 MiB: without a bound, any caller could open downloads until the server's
 * uplink and file handles were spent on it. A download holds its slot until its answer has been
 * sent or its connection is gone.
 */
export interface DownloadLimits {
  maxPerClient: number;
  maxConcurrent: number;
}

export type DownloadAdmission = { release(): void } | { refused: string };

export class DownloadGate {
  readonly #perClient = new Map<string, number>();
  #total = 0;

  constructor(private readonly limits: DownloadLimits) {}

  /** Downloads under way (for tests and metrics). */
  get open(): number {
    return this.#total;
  }

  /** A slot for `client`: `release` (idempotent) gives it back; `refused` says which bound is full. */
  enter(client: string): DownloadAdmission {
    const mine = this.#perClient.get(client) ?? 0;
    if (mine >= this.limits.maxPerClient)
      return {
        refused: `This address already receives ${mine} download${mine === 1 ? '' : 's'} of the agent, the most one address may receive at once (fleet.downloads.maxPerClient ${this.limits.maxPerClient}); retry when one has finished.`,
      };
    if (this.#total >= this.limits.maxConcurrent)
      return {
        refused: `The server already sends ${this.#total} downloads of the agent, the most it sends at once (fleet.downloads.maxConcurrent ${this.limits.maxConcurrent}); retry in a few seconds.`,
      };
    this.#perClient.set(client, mine + 1);
    this.#total++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#total--;
        const left = (this.#perClient.get(client) ?? 1) - 1;
        if (left <= 0) this.#perClient.delete(client);
        else this.#perClient.set(client, left);
      },
    };
  }
}
