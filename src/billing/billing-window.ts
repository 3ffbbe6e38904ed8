/**
 * The time window and buckets of a billing query (REST `GET /v2/billing*`): bucket boundaries in
 * UTC (an hour, a day from midnight, an ISO week from Monday midnight, a calendar month or year),
 * the window snapped outward to them, and `lastN` counted back from the current bucket.
 */
import { ApiError } from '../domain/errors.js';

export const BUCKET_SIZES = ['hour', 'day', 'week', 'month', 'year'] as const;
export type BucketSize = (typeof BUCKET_SIZES)[number];

/** The most buckets one query may span: keeps an hourly query over years from building millions of records. */
export const MAX_BUCKETS = 10_000;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** What `startTime` defaults to: this long before now. */
const DEFAULT_SPAN_MS = 30 * DAY;

/** The start of the bucket `ms` lies in. */
export function bucketStart(ms: number, size: BucketSize): number {
  switch (size) {
    case 'hour':
      return Math.floor(ms / HOUR) * HOUR;
    case 'day':
      return Math.floor(ms / DAY) * DAY;
    case 'week': {
      const days = Math.floor(ms / DAY);
      // 1970-01-01 was a Thursday: (days + 3) % 7 counts days since Monday.
      return (days - ((((days + 3) % 7) + 7) % 7)) * DAY;
    }
    case 'month': {
      const d = new Date(ms);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    }
    case 'year':
      return Date.UTC(new Date(ms).getUTCFullYear(), 0, 1);
    default: {
      const unreachable: never = size;
      return unreachable;
    }
  }
}

/** The start of the bucket after the one starting at `start` (a boundary). */
export function nextBucket(start: number, size: BucketSize): number {
  switch (size) {
    case 'hour':
      return start + HOUR;
    case 'day':
      return start + DAY;
    case 'week':
      return start + 7 * DAY;
    case 'month': {
      const d = new Date(start);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    }
    case 'year':
      return Date.UTC(new Date(start).getUTCFullYear() + 1, 0, 1);
    default: {
      const unreachable: never = size;
      return unreachable;
    }
  }
}

/** A half-open range [start, end) of epoch milliseconds. */
interface Range {
  start: number;
  end: number;
}

/** The resolved window of a query and its buckets, oldest first. */
export interface BillingWindow extends Range {
  bucketSize: BucketSize;
  buckets: Range[];
}

/** The query parameters every billing operation takes, as the route validated their form. */
export interface WindowQuery {
  startTime?: string | undefined;
  endTime?: string | undefined;
  bucketSize?: BucketSize | undefined;
  lastN?: number | undefined;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function parseTime(name: string, text: string): number {
  const ms = RFC3339.test(text) ? Date.parse(text) : NaN;
  if (!Number.isFinite(ms))
    throw new ApiError(
      'INVALID_PARAMETER',
      `${name} must be an RFC 3339 date-time with a time zone, such as 2026-05-01T00:00:00Z (got "${text}").`,
    );
  return ms;
}

const tooMany = (count: string, size: BucketSize): ApiError =>
  new ApiError(
    'INVALID_PARAMETER',
    `The query spans ${count} ${size} buckets; at most ${MAX_BUCKETS} are answered at once. Narrow startTime/endTime, lower lastN, or use a larger bucketSize.`,
  );

/** Resolves the window of a query at `now`; a bad combination answers 400 INVALID_PARAMETER saying why. */
export function resolveWindow(query: WindowQuery, now: number): BillingWindow {
  const bucketSize = query.bucketSize ?? 'day';
  let start: number;
  let end: number;
  if (query.lastN !== undefined) {
    if (query.startTime !== undefined || query.endTime !== undefined)
      throw new ApiError(
        'INVALID_PARAMETER',
        'lastN cannot be combined with startTime or endTime: give either lastN (the most recent buckets) or a startTime/endTime range.',
      );
    if (!Number.isInteger(query.lastN) || query.lastN < 1)
      throw new ApiError('INVALID_PARAMETER', `lastN must be an integer of at least 1 (got ${query.lastN}).`);
    if (query.lastN > MAX_BUCKETS) throw tooMany(String(query.lastN), bucketSize);
    const current = bucketStart(now, bucketSize);
    end = nextBucket(current, bucketSize);
    start = current;
    for (let i = 1; i < query.lastN; i++) start = bucketStart(start - 1, bucketSize);
  } else {
    const from = query.startTime !== undefined ? parseTime('startTime', query.startTime) : now - DEFAULT_SPAN_MS;
    const to = query.endTime !== undefined ? parseTime('endTime', query.endTime) : now;
    if (from >= to)
      throw new ApiError(
        'INVALID_PARAMETER',
        `startTime must be before endTime (got startTime ${new Date(from).toISOString()}, endTime ${new Date(to).toISOString()}${query.startTime === undefined ? '; startTime defaults to 30 days ago' : ''}${query.endTime === undefined ? '; endTime defaults to now' : ''}).`,
      );
    start = bucketStart(from, bucketSize);
    const last = bucketStart(to, bucketSize);
    end = last === to ? to : nextBucket(last, bucketSize);
  }
  const buckets: Range[] = [];
  for (let s = start; s < end; s = nextBucket(s, bucketSize)) {
    if (buckets.length === MAX_BUCKETS) throw tooMany(`more than ${MAX_BUCKETS}`, bucketSize);
    buckets.push({ start: s, end: nextBucket(s, bucketSize) });
  }
  return { start, end, bucketSize, buckets };
}

/** RFC 3339 in UTC, to the second when the instant has no milliseconds: `2026-06-01T00:00:00Z`. */
export const rfc3339 = (ms: number): string => new Date(ms).toISOString().replace('.000Z', 'Z');
