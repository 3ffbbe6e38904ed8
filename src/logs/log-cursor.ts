/**
 * The `id` of a log event and the resume cursor it becomes (`Last-Event-ID`): `<ts>/<ordinal>`,
 * `ts` in RFC3339 with milliseconds (UTC), `ordinal` the 12-digit index of the line among the
 * stream's lines with that same `ts` (docs/logs.md). A plain RFC3339 time is accepted too.
 */

/** Where a stream resumes: after the line `ordinal` at `ts`; `ordinal` null = after every line at `ts`. */
export interface LogCursor {
  ts: number;
  ordinal: number | null;
}

// RFC3339: a date, `T`, a time with optional fraction, and `Z` or an offset.
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/** ms epoch of an RFC3339 time, or null when it is not one. */
export function parseRfc3339(text: string): number | null {
  if (!RFC3339.test(text)) return null;
  const ms = Date.parse(text.toUpperCase());
  return Number.isFinite(ms) ? ms : null;
}

/** RFC3339 with milliseconds, UTC: `2026-06-01T12:02:03.000Z`. */
export const formatTs = (ms: number): string => new Date(ms).toISOString();

export const formatEventId = (ts: number, ordinal: number): string =>
  `${formatTs(ts)}/${String(ordinal).padStart(12, '0')}`;

/** A `Last-Event-ID` this endpoint emitted (or a plain RFC3339 time), or null when it is neither. */
export function parseEventId(text: string): LogCursor | null {
  const slash = text.lastIndexOf('/');
  if (slash === -1) {
    const ts = parseRfc3339(text.trim());
    return ts === null ? null : { ts, ordinal: null };
  }
  const ts = parseRfc3339(text.slice(0, slash).trim());
  const ordinal = text.slice(slash + 1).trim();
  if (ts === null || !/^\d{1,15}$/.test(ordinal)) return null;
  return { ts, ordinal: Number(ordinal) };
}
