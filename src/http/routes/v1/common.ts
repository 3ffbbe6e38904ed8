/** What the REST v1 route files share: path parameters, the start command's two arrays, errors. */
import { Type, type TString } from '@sinclair/typebox';
import { ID_PATTERN } from '../../../domain/ids.js';
import { badRequest } from '../../../domain/errors.js';
import { MAX_START_COMMAND_WORDS, overrideText, shellWords, startCommandOf } from '../../../domain/start-command.js';
import { splitArgs } from '../../../runtime/split-args.js';
import { errorResponses } from '../../schemas.js';

export const closed = { additionalProperties: false } as const;

/** A v1 path parameter (`podId`, `templateId`, ...): Gantry ids, so other text answers 400. */
export const IdParam = <K extends string>(name: K) =>
  Type.Object({ [name]: Type.String({ pattern: ID_PATTERN }) } as Record<K, ReturnType<typeof Type.String>>, closed);

export { errorResponses };

export { Deleted } from '../../schemas.js';

/** The v1 `env` object: names to values. */
export const Env = Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.String({ maxLength: 32768 }), {
  maxProperties: 256,
});

export const StringArray = (description: string, item: TString = Type.String({ minLength: 1, maxLength: 256 })) =>
  Type.Array(item, { maxItems: 64, description });

/** v1 `dockerEntrypoint`: replaces the image's ENTRYPOINT (docs/api.md "The start command"). */
export const Entrypoint = Type.Array(Type.String({ maxLength: 8192 }), {
  maxItems: MAX_START_COMMAND_WORDS,
  description:
    "Replaces the image's ENTRYPOINT; [] = the image's own. With an entrypoint, dockerStartCmd is the whole command after it (the image's CMD is not used). Runtime process refuses a non-empty one (400 ENTRYPOINT_NOT_SUPPORTED).",
});

export const StartCmd = Type.Array(Type.String({ maxLength: 8192 }), {
  maxItems: MAX_START_COMMAND_WORDS,
  description: 'The start command as argv words; [] = the image CMD.',
});

/**
 * v1's two arrays as the start command Gantry stores: with an entrypoint, the override
 * (`{"cmd": [...], "entrypoint": [...]}`), else the command as shell words (as before).
 */
export const argsOf = (entrypoint: readonly string[], cmd: readonly string[]): string =>
  entrypoint.length > 0 ? overrideText(entrypoint, cmd) : shellWords(cmd);

/** The stored start command as v1's `dockerEntrypoint` and `dockerStartCmd`. */
export function v1StartOf(args: string): { dockerEntrypoint: string[]; dockerStartCmd: string[] } {
  const command = startCommandOf(args);
  if (command.form === 'override')
    return { dockerEntrypoint: command.entrypoint ?? [], dockerStartCmd: command.cmd ?? [] };
  let words: string[];
  try {
    words = splitArgs(args);
  } catch {
    words = [args];
  }
  return { dockerEntrypoint: [], dockerStartCmd: words };
}

/**
 * A v1 update's start command: each array sent replaces its part, the one not sent is kept from
 * `current` (so sending dockerStartCmd alone keeps an overridden entrypoint); undefined when
 * neither is sent.
 */
export async function updatedArgs(
  current: () => Promise<string>,
  b: { dockerEntrypoint?: string[] | undefined; dockerStartCmd?: string[] | undefined },
): Promise<string | undefined> {
  if (b.dockerEntrypoint === undefined && b.dockerStartCmd === undefined) return undefined;
  const was = v1StartOf(await current());
  return argsOf(b.dockerEntrypoint ?? was.dockerEntrypoint, b.dockerStartCmd ?? was.dockerStartCmd);
}

/** A v1 body field with no Gantry counterpart that is refused unless it holds its neutral value. */
export function refuseUnsupported(field: string, value: unknown, neutral: unknown, why: string): void {
  if (value !== undefined && JSON.stringify(value) !== JSON.stringify(neutral)) throw badRequest(`${field}: ${why}`);
}
