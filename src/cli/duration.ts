import { UsageError } from './usage-error.js';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `30m`, `1h`, `2d`, `1500ms` → milliseconds; anything else is a usage error naming `flag`. */
export function parseDuration(flag: string, text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (!m) throw new UsageError(`${flag} "${text}" is not a duration: write a number and a unit, e.g. 30s, 5m, 1h`);
  return Math.round(Number(m[1]) * UNITS[m[2]!]!);
}
