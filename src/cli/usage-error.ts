/** A command line the CLI cannot act on: reported on stderr, exit status 2. */
export class UsageError extends Error {}
