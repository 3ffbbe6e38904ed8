/**
 * The client commands' exit statuses (docs/cli.md "Exit codes"): scripts branch on them.
 * 0 ok · 1 the API refused or failed (or the server cannot be reached) · 2 usage or configuration
 * error · 3 not found (404) · 4 authentication or permission (401/403, or no key) · 5 timed out
 * waiting (a pod that does not reach RUNNING, a job that does not finish, within --timeout).
 */
export const EXIT = { ok: 0, error: 1, usage: 2, notFound: 3, auth: 4, timedOut: 5 } as const;

/** An error the CLI reports as one message on stderr and ends with `exitCode`. */
export class CliError extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** The exit status of an API answer's HTTP status. */
export function exitCodeOf(status: number): number {
  if (status === 404) return EXIT.notFound;
  if (status === 401 || status === 403) return EXIT.auth;
  return EXIT.error;
}
