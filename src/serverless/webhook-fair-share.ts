/**
 * Who may send a webhook next: calls in flight per account and per receiver, and the turn order
 * of accounts. The dispatcher asks it which account to serve, and which receivers to pass over,
 * before every claim, so that no account holds more than its cap, no receiver more than its cap,
 * and an account with a long backlog takes its turn like the others instead of going first.
 */
export interface FairShareLimits {
  perAccount: number;
  perReceiver: number;
}

export class WebhookFairShare {
  readonly #limits: FairShareLimits;
  readonly #accountCalls = new Map<string, number>();
  readonly #receiverCalls = new Map<string, number>();
  /** The account served last: the next round starts after it. */
  #lastServed = '';

  constructor(limits: FairShareLimits) {
    this.#limits = limits;
  }

  /**
   * The accounts among `due` (ordered by id) that are under their cap, in turn order: those after
   * the account served last first, then the rest.
   */
  turnOrder(due: readonly string[]): string[] {
    const turn = due.findIndex((a) => a > this.#lastServed);
    const rotated = turn < 0 ? [...due] : [...due.slice(turn), ...due.slice(0, turn)];
    return rotated.filter((a) => this.hasRoom(a));
  }

  /** Takes the next account to serve out of `queue`: the fewest calls in flight, the earliest in turn among equals. */
  takeNext(queue: string[]): string | undefined {
    let pick = 0;
    for (let i = 1; i < queue.length; i++)
      if (this.#calls(this.#accountCalls, queue[i]!) < this.#calls(this.#accountCalls, queue[pick]!)) pick = i;
    return queue.splice(pick, 1)[0];
  }

  hasRoom(account: string): boolean {
    return this.#calls(this.#accountCalls, account) < this.#limits.perAccount;
  }

  /** Receivers at their cap: a claim passes over their deliveries. */
  fullReceivers(): string[] {
    return [...this.#receiverCalls].filter(([, n]) => n >= this.#limits.perReceiver).map(([r]) => r);
  }

  /** A call started. */
  started(account: string, receiver: string): void {
    this.#lastServed = account;
    this.#bump(this.#accountCalls, account, 1);
    this.#bump(this.#receiverCalls, receiver, 1);
  }

  /** A call ended (its outcome recorded). */
  ended(account: string, receiver: string): void {
    this.#bump(this.#accountCalls, account, -1);
    this.#bump(this.#receiverCalls, receiver, -1);
  }

  #calls(map: Map<string, number>, key: string): number {
    return map.get(key) ?? 0;
  }

  #bump(map: Map<string, number>, key: string, by: number): void {
    const n = this.#calls(map, key) + by;
    if (n > 0) map.set(key, n);
    else map.delete(key);
  }
}
