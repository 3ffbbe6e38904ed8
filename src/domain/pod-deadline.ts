/**
 * A pod's own stop and termination times (`stopAfter`, `terminateAfter` on a create: runpodctl's
 * `pod create --stop-after/--terminate-after`): when each comes, the pod stops, or terminates,
 * itself. Pure: `now` comes in.
 */
import { badRequest } from './errors.js';

export interface PodDeadline {
  /** ms epoch; null: none (or already acted on) */
  stopAfter: number | null;
  terminateAfter: number | null;
}

/** RFC 3339 date-time, as runpodctl documents it (`2026-04-15T00:00:00Z`); an offset or fraction may follow. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:\d{2})$/;

/** The most a time may lie ahead: a bound on a stored number, far beyond any pod's life (100 years). */
const MAX_AHEAD_MS = 100 * 365 * 24 * 3_600_000;

/** Whether the date's day exists in its month (`Date.parse` reads 2026-02-30 as March 2). */
function realDay(text: string): boolean {
  const [year, month, day] = text.slice(0, 10).split('-').map(Number) as [number, number, number];
  return month >= 1 && month <= 12 && day >= 1 && day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}

function timeOf(field: 'stopAfter' | 'terminateAfter', value: string | null | undefined, now: number): number | null {
  if (value == null || value.trim() === '') return null;
  const text = value.trim();
  const at = DATE_TIME.test(text) && realDay(text) ? Date.parse(text.replace(' ', 'T')) : NaN;
  if (!Number.isFinite(at))
    throw badRequest(
      `${field} "${value.slice(0, 64)}" is not a date-time; send one such as "2026-04-15T00:00:00Z" (RFC 3339, with Z or an offset).`,
    );
  if (at <= now)
    throw badRequest(
      `${field} ${new Date(at).toISOString()} is not in the future (the server's time is ${new Date(now).toISOString()}).`,
    );
  if (at - now > MAX_AHEAD_MS) throw badRequest(`${field} ${new Date(at).toISOString()} is more than 100 years ahead.`);
  return at;
}

/**
 * The deadline a create asks for, or null when it asks for none (empty strings, what clients send
 * by default, ask for none). A time that is not an RFC 3339 date-time, or not after `now`, is refused.
 */
export function deadlineOf(
  input: { stopAfter?: string | null; terminateAfter?: string | null },
  now: number,
): PodDeadline | null {
  const stopAfter = timeOf('stopAfter', input.stopAfter, now);
  const terminateAfter = timeOf('terminateAfter', input.terminateAfter, now);
  return stopAfter === null && terminateAfter === null ? null : { stopAfter, terminateAfter };
}

/** What is due at `now`: terminating wins over stopping (a terminated pod is stopped too). */
export function dueAction(deadline: PodDeadline, now: number): 'terminate' | 'stop' | null {
  if (deadline.terminateAfter !== null && deadline.terminateAfter <= now) return 'terminate';
  if (deadline.stopAfter !== null && deadline.stopAfter <= now) return 'stop';
  return null;
}
