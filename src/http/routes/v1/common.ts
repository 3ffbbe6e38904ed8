/** What the REST v1 route files share: path parameters, list quoting of start commands, errors. */
import { Type, type TString } from '@sinclair/typebox';
import { ID_PATTERN } from '../../../domain/ids.js';
import { badRequest } from '../../../domain/errors.js';
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

/** v1 `dockerEntrypoint`: Gantry keeps the image's entrypoint, so only [] is accepted. */
export const Entrypoint = Type.Array(Type.String({ maxLength: 8192 }), {
  maxItems: 0,
  description: 'Only [] (the image entrypoint): Gantry does not override entrypoints.',
});

export const StartCmd = Type.Array(Type.String({ maxLength: 8192 }), {
  maxItems: 256,
  description: 'The start command as argv words; [] = the image CMD.',
});

/** A word quoted so that splitArgs gives it back unchanged. */
const quoteWord = (w: string): string =>
  w !== '' && /^[A-Za-z0-9_./:=@%+,-]+$/.test(w) ? w : `'${w.replace(/'/g, `'"'"'`)}'`;

/** v1 `dockerStartCmd` (argv words) as Gantry's `args` string. */
export const argsOf = (words: readonly string[]): string => words.map(quoteWord).join(' ');

/** Gantry's `args` string as v1 `dockerStartCmd` words. */
export function startCmdOf(args: string): string[] {
  try {
    return splitArgs(args);
  } catch {
    return [args];
  }
}

/** A v1 body field with no Gantry counterpart that is refused unless it holds its neutral value. */
export function refuseUnsupported(field: string, value: unknown, neutral: unknown, why: string): void {
  if (value !== undefined && JSON.stringify(value) !== JSON.stringify(neutral)) throw badRequest(`${field}: ${why}`);
}
