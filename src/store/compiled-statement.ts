/**
 * Statements compiled once and rebound per call. A statement's per-call values are named slots
 * (`slot`); its constants are SQL literals, never parameters. Kysely runs the compiled text
 * (`runAsync`), or SQLite prepares it once and rebinds it per row (`prepareSync`).
 */
import { CompiledQuery, type Compilable } from 'kysely';
import type SqliteDatabase from 'better-sqlite3';
import type { Executor } from './database.js';
import type { JobsTable } from './endpoint-tables.js';

const SLOT = '\u0000slot:';

/** A value bound per call: the named placeholder of a statement compiled once. */
export const slot = <T>(name: string): T => `${SLOT}${name}` as T;

/** Every key of `A` as its own slot. */
export function slotsOf<A extends object>(keys: ReadonlyArray<Extract<keyof A, string>>): A {
  return Object.fromEntries(keys.map((k) => [k, slot(k)])) as A;
}

/**
 * A statement's values in the order of its declared slots (a name may repeat: the text binds it
 * again). The argument builders answer these tuples, which bind positionally as they are.
 */
export type SlotValues<A, S extends ReadonlyArray<keyof A>> = { -readonly [I in keyof S]: A[S[I]] };

/** A statement's compiled text; its values are the tuple of its declared slots, in order. */
export interface CompiledStatement<V extends readonly unknown[]> {
  readonly sql: string;
  /** The slots the text binds, in order (as declared, and checked against the compiled text). */
  readonly slots: readonly string[];
  /** Phantom: the values' tuple type. */
  readonly values?: V;
}

/**
 * Compiles `query` and checks that its parameters are exactly the declared `slots`, in order: no
 * constant bound as a parameter (constants are SQL literals), no slot missing, moved or extra. A
 * statement whose declaration disagrees with its text fails when it compiles, not when a row binds
 * the wrong value.
 */
export function compileStatement<V extends readonly unknown[]>(
  query: Compilable,
  slots: readonly string[],
): CompiledStatement<V> {
  const compiled = query.compile();
  const bound = compiled.parameters.map((p) =>
    typeof p === 'string' && p.startsWith(SLOT) ? p.slice(SLOT.length) : `constant ${JSON.stringify(p)}`,
  );
  if (bound.length !== slots.length || bound.some((b, i) => b !== slots[i]))
    throw new Error(
      `statement binds [${bound.join(', ')}] but declares [${slots.join(', ')}]: ${compiled.sql.slice(0, 80)}`,
    );
  return { sql: compiled.sql, slots };
}

/** The asynchronous executor: Kysely runs the compiled text with `values`. */
export async function runAsync<V extends readonly unknown[], R = JobsTable>(
  tx: Executor,
  s: CompiledStatement<V>,
  values: V,
): Promise<R[]> {
  return (await tx.executeQuery<R>(CompiledQuery.raw(s.sql, values as unknown as unknown[]))).rows;
}

/** The synchronous executor (SQLite): the compiled text prepared on `raw`, rebound per call. */
export function prepareSync<V extends readonly unknown[], R = JobsTable>(
  raw: SqliteDatabase.Database,
  s: CompiledStatement<V>,
): { get(values: V): R | undefined; all(values: V): R[]; run(values: V): void } {
  // `raw.prepare` answers from the connection's statement cache (see `Db.syncTransaction`)
  const stmt = raw.prepare<unknown[], R>(s.sql);
  return {
    get: (values) => stmt.get(...values),
    all: (values) => stmt.all(...values),
    run: (values) => void stmt.run(...values),
  };
}

/** Where each slot of `slots` first sits in their values. */
export function slotIndex<S extends readonly string[]>(slots: S): Record<S[number], number> {
  const at: Record<string, number> = {};
  slots.forEach((name, i) => (at[name] ??= i));
  return at;
}
