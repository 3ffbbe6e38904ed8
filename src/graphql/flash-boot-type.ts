/**
 * The `FlashBootType` scalar's values and their parsing: clients send the enum literal, a string,
 * "" for OFF or a boolean; anything else is a VALIDATION_FAILED error.
 */
import { GraphQLError, Kind, type ValueNode } from 'graphql';

const FLASHBOOT_VALUES = ['FLASHBOOT', 'OFF'] as const;
export type FlashBootType = (typeof FLASHBOOT_VALUES)[number];

const flashBootError = (got: string): GraphQLError =>
  new GraphQLError(`flashBootType: "${got}" is not valid; use FLASHBOOT or OFF.`, {
    extensions: { code: 'VALIDATION_FAILED' },
  });

/** A FlashBootType from a variable: FLASHBOOT or OFF in any case, "" or false for OFF, true for FLASHBOOT. */
export function parseFlashBoot(value: unknown): FlashBootType {
  if (value === '' || value === false) return 'OFF';
  if (value === true) return 'FLASHBOOT';
  const text = typeof value === 'string' ? value.toUpperCase() : String(value);
  if ((FLASHBOOT_VALUES as readonly string[]).includes(text)) return text as FlashBootType;
  throw flashBootError(String(value));
}

/** A FlashBootType written in the query: an enum literal, a string or a boolean. */
export function parseFlashBootLiteral(node: ValueNode): FlashBootType {
  if (node.kind === Kind.ENUM || node.kind === Kind.STRING) return parseFlashBoot(node.value);
  if (node.kind === Kind.BOOLEAN) return parseFlashBoot(node.value);
  throw flashBootError(node.kind);
}
