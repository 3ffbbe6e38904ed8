/**
 * The operations this host applied, and how each went: `applied.json` in the agent's data dir,
 * the last {@link DEFAULT_LIMIT}. An operation stays pending on the control plane until it is
 * acknowledged, so a lost connection (or an agent killed between applying and acknowledging)
 * redelivers it: one found here is acknowledged again with its result, not applied twice.
 *
 * A result is on disk before its acknowledgement is sent (`record()` resolves then). Writes are
 * coalesced: records made while a write runs go out together in the next one.
 */
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { OperationAck, OperationResult } from '../fleet/protocol.js';
import { writeFileAtomic } from './credential-file.js';

export type AppliedResult = Omit<OperationAck, 'opId'>;

/** How many operations are remembered. @default 10000 */
const DEFAULT_LIMIT = 10_000;

const FORMAT_VERSION = 1;

export class AppliedOperations {
  readonly #path: string;
  readonly #limit: number;
  /** insertion order: the oldest first */
  readonly #results: Map<string, AppliedResult>;
  #writing: Promise<void> | null = null;
  #next: Promise<void> | null = null;

  private constructor(path: string, limit: number, results: Map<string, AppliedResult>) {
    this.#path = path;
    this.#limit = limit;
    this.#results = results;
  }

  /** Reads `path`; a file that is missing starts empty, one that cannot be read too (with a warning). */
  static async open(
    path: string,
    options: { logger: Pick<Logger, 'warn'>; limit?: number },
  ): Promise<AppliedOperations> {
    const limit = options.limit ?? DEFAULT_LIMIT;
    const results = new Map<string, AppliedResult>();
    let text: string | null = null;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        options.logger.warn(
          { path, err: (err as Error).message },
          'cannot read the applied operations; starting without them',
        );
    }
    if (text !== null) {
      const entries = parseEntries(text);
      if (entries === null)
        options.logger.warn({ path }, 'the applied operations file is not one gantry agent wrote; starting without it');
      else for (const [id, result] of entries.slice(-limit)) results.set(id, result);
    }
    return new AppliedOperations(path, limit, results);
  }

  get size(): number {
    return this.#results.size;
  }

  get(opId: string): AppliedResult | undefined {
    const result = this.#results.get(opId);
    return result && { ...result };
  }

  /** Remembers how `opId` went; resolves once that is on disk. */
  record(opId: string, result: AppliedResult): Promise<void> {
    this.#results.delete(opId);
    this.#results.set(opId, { ...result });
    for (const oldest of this.#results.keys()) {
      if (this.#results.size <= this.#limit) break;
      this.#results.delete(oldest);
    }
    return this.#flush();
  }

  #flush(): Promise<void> {
    if (this.#next) return this.#next;
    if (!this.#writing) {
      this.#writing = this.#write().finally(() => {
        this.#writing = null;
      });
      return this.#writing;
    }
    // A write is under way with an older content: one more follows it, for every record made meanwhile.
    this.#next = this.#writing
      .catch(() => undefined)
      .then(() => {
        this.#next = null;
        return this.#flush();
      });
    return this.#next;
  }

  #write(): Promise<void> {
    const operations = [...this.#results].map(([id, r]) => [
      id,
      r.ok ? { ok: true, ...(r.result ? { result: r.result } : {}) } : { ok: false, error: r.error ?? '' },
    ]);
    return writeFileAtomic(this.#path, JSON.stringify({ version: FORMAT_VERSION, operations }));
  }
}

function parseEntries(text: string): Array<[string, AppliedResult]> | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  const o = parsed as { version?: unknown; operations?: unknown } | null;
  if (typeof o !== 'object' || o === null || o.version !== FORMAT_VERSION || !Array.isArray(o.operations)) return null;
  const entries: Array<[string, AppliedResult]> = [];
  for (const entry of o.operations) {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string' || typeof entry[1] !== 'object' || entry[1] === null)
      return null;
    const r = entry[1] as { ok?: unknown; error?: unknown; result?: unknown };
    if (typeof r.ok !== 'boolean') return null;
    // An image operation's result goes back as it was written (the control plane checks its shape).
    const result = typeof r.result === 'object' && r.result !== null ? { result: r.result as OperationResult } : {};
    entries.push([
      entry[0],
      r.ok ? { ok: true, ...result } : { ok: false, error: typeof r.error === 'string' ? r.error : '' },
    ]);
  }
  return entries;
}
