import { constants } from 'node:os';
import type { ContainerState } from './engine-types.js';

const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([name, n]) => [n, name]));

/**
 * Why a container ended, in the words of the process runtime's reasons, its output's last lines
 * appended: `process exited with code 3; last output:\nboom`.
 * - killed by the kernel for its memory limit: says so, with the limit;
 * - an exit code above 128 names the signal (`137` = 128 + SIGKILL);
 * - `starting`: it ended before its health check passed.
 */
export function exitReason(
  state: Pick<ContainerState, 'ExitCode' | 'OOMKilled' | 'Error'>,
  tail: string,
  options: { starting?: boolean; memoryBytes?: number } = {},
): string {
  let what: string;
  if (state.OOMKilled) {
    const limit = options.memoryBytes ? ` of ${formatGiB(options.memoryBytes)}` : '';
    what = `process was killed for running out of memory (its limit${limit}), exit code ${state.ExitCode}`;
  } else if (state.ExitCode > 128 && SIGNAL_NAMES.has(state.ExitCode - 128)) {
    what = `process was killed by ${SIGNAL_NAMES.get(state.ExitCode - 128)} (exit code ${state.ExitCode})`;
  } else {
    what = `process exited with code ${state.ExitCode}`;
  }
  if (state.Error) what += ` (${state.Error})`;
  if (options.starting) what += ' before its health check passed';
  return withOutput(what, tail);
}

/** Appends the tail of the output to a reason, so the user sees why. */
export const withOutput = (reason: string, tail: string): string =>
  tail ? `${reason}; last output:\n${tail}` : reason;

const formatGiB = (bytes: number): string => `${Number((bytes / 1024 ** 3).toFixed(2))} GiB`;
