/** The readers every config section uses: each failure names the key and throws `Invalid configuration: …`. */

export type Obj = Record<string, unknown>;
export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export function fail(message: string): never {
  throw new Error(`Invalid configuration: ${message}`);
}

export function num(v: unknown, field: string, fallback: number): number {
  if (v === undefined || v === null) return fallback;
  const n = typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) fail(`${field} must be a non-negative number`);
  return n;
}

export function bool(v: unknown, field: string, fallback: boolean): boolean {
  if (v === undefined || v === null || v === '') return fallback;
  if (v === true || v === 'true' || v === '1') return true;
  if (v === false || v === 'false' || v === '0') return false;
  fail(`${field} must be true or false`);
}
