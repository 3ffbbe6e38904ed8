/**
 * What a container runs, read from a pod's or template's `args` (GraphQL `dockerArgs`, REST v2
 * `args`, REST v1 `dockerEntrypoint` + `dockerStartCmd`). Two forms, told apart by one exact rule
 * (docs/api.md "The start command"):
 *
 * - the **override**: a JSON object whose only keys are `cmd` and/or `entrypoint`, each an array of
 *   strings — `{"cmd": ["…"], "entrypoint": ["/bin/sh", "-c"]}`, as dstack sends it. `entrypoint`
 *   replaces the image's ENTRYPOINT and `cmd` its CMD, word for word; an absent or empty array keeps
 *   the image's own (with an entrypoint given, the image's CMD is not used, as `docker run
 *   --entrypoint` does);
 * - **shell words**: anything else, split like a shell would (runtime/split-args.ts) into the CMD,
 *   the image's ENTRYPOINT kept.
 *
 * The text is stored as it was given; this module only reads it, and writes the override for the
 * transports whose clients send arrays.
 */
import { ApiError } from './errors.js';

export type StartCommand =
  | { form: 'words'; text: string }
  /** null: the image's own */
  | { form: 'override'; entrypoint: string[] | null; cmd: string[] | null };

/** The longest `args` text a pod or template may hold, however it was given. */
export const MAX_START_COMMAND_CHARS = 16_384;
/** The most words an override's `entrypoint` or `cmd` may hold. */
export const MAX_START_COMMAND_WORDS = 256;

const isWords = (v: unknown): v is string[] => Array.isArray(v) && v.every((w) => typeof w === 'string');

/** Reads `args`: the override when it is one (the exact rule above), else shell words. */
export function startCommandOf(args: string): StartCommand {
  const words: StartCommand = { form: 'words', text: args };
  // Cheap before a parse: an override is an object.
  if (!args.trimStart().startsWith('{')) return words;
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    return words;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return words;
  const keys = Object.keys(parsed);
  if (keys.length === 0 || !keys.every((k) => k === 'cmd' || k === 'entrypoint')) return words;
  const { cmd, entrypoint } = parsed as { cmd?: unknown; entrypoint?: unknown };
  if ((cmd !== undefined && !isWords(cmd)) || (entrypoint !== undefined && !isWords(entrypoint))) return words;
  return {
    form: 'override',
    entrypoint: entrypoint !== undefined && entrypoint.length > 0 ? entrypoint : null,
    cmd: cmd !== undefined && cmd.length > 0 ? cmd : null,
  };
}

/** The entrypoint `args` puts in place of the image's, or null when it keeps the image's. */
export const entrypointOf = (args: string): string[] | null => {
  const command = startCommandOf(args);
  return command.form === 'override' ? command.entrypoint : null;
};

/**
 * The override as text (`{"cmd": […], "entrypoint": […]}`, the key order and spacing dstack
 * sends), for transports whose clients send word arrays; an empty entrypoint is left out.
 */
export function overrideText(entrypoint: readonly string[], cmd: readonly string[]): string {
  const list = (words: readonly string[]): string => `[${words.map((w) => JSON.stringify(w)).join(', ')}]`;
  const parts = [`"cmd": ${list(cmd)}`];
  if (entrypoint.length > 0) parts.push(`"entrypoint": ${list(entrypoint)}`);
  return `{${parts.join(', ')}}`;
}

/** A word quoted so that a shell-like split (runtime/split-args.ts) gives it back unchanged. */
const quoteWord = (w: string): string =>
  w !== '' && /^[A-Za-z0-9_./:=@%+,-]+$/.test(w) ? w : `'${w.replace(/'/g, `'"'"'`)}'`;

/** Words as shell-word text that splits back into exactly them. */
export const shellWords = (words: readonly string[]): string => words.map(quoteWord).join(' ');

/** How a refusal names the start command: each transport calls it differently. */
const FIELD = 'The start command (args; GraphQL dockerArgs; REST v1 dockerEntrypoint and dockerStartCmd)';

/**
 * The bounds of a start command, whichever form: at most {@link MAX_START_COMMAND_CHARS}
 * characters, no NUL (no program can be given one), and an override's entrypoint names a program
 * and neither array holds more than {@link MAX_START_COMMAND_WORDS} words.
 */
export function checkStartCommand(args: string, field = FIELD): void {
  if (args.length > MAX_START_COMMAND_CHARS)
    throw new ApiError(
      'BAD_REQUEST',
      `${field} is ${args.length} characters long; a start command holds at most ${MAX_START_COMMAND_CHARS}. Put a long script in the image or on a volume and run it from there.`,
    );
  if (args.includes('\0'))
    throw new ApiError('BAD_REQUEST', `${field} holds a NUL character, which no program can be given.`);
  const command = startCommandOf(args);
  if (command.form === 'words') return;
  for (const [name, words] of [
    ['entrypoint', command.entrypoint],
    ['cmd', command.cmd],
  ] as const)
    if (words && words.length > MAX_START_COMMAND_WORDS)
      throw new ApiError(
        'BAD_REQUEST',
        `${field}: the override's ${name} has ${words.length} words; at most ${MAX_START_COMMAND_WORDS}.`,
      );
  if (command.entrypoint && command.entrypoint[0] === '')
    throw new ApiError(
      'BAD_REQUEST',
      `${field}: the override's entrypoint starts with an empty word; its first word is the program to run.`,
    );
}

/** What a runtime can run: its kind, and whether it replaces an image's ENTRYPOINT (its module's `entrypointOverride`). */
export interface EntrypointSupport {
  runtime: string;
  entrypointOverride: boolean;
}

/** Refuses a start command that replaces the image's entrypoint on a runtime that cannot (400 ENTRYPOINT_NOT_SUPPORTED). */
export function assertEntrypointSupported(support: EntrypointSupport, args: string, field = FIELD): void {
  if (support.entrypointOverride || entrypointOf(args) === null) return;
  throw new ApiError(
    'ENTRYPOINT_NOT_SUPPORTED',
    `${field} replaces the image's entrypoint, which runtime ${support.runtime} cannot do: it runs the command its \`images\` entry maps the image to, with the start command's words as arguments. Send the command as words (args, or {"cmd": [...]} without "entrypoint"), or run the pod on runtime docker or a fleet.`,
  );
}
