import { visit, type DocumentNode } from 'graphql';
import { findNul, nulViolation } from '../transport/nul-text.js';

/**
 * GraphQL strings holding a NUL (none may reach a store: see transport/nul-text.ts). Each answers the
 * refusal message naming where the NUL is, or null.
 */

/** A variable (or a key of one) holding a NUL: `variables.input.env.0.value`. */
export function nulVariable(variables: Record<string, unknown> | null): string | null {
  const at = findNul(variables, 'variables');
  return at === null ? null : `The request failed validation: ${nulViolation(at)}.`;
}

/** A string literal in the document holding a NUL, named by its argument and input fields: `input.name`. */
export function nulArgument(document: DocumentNode): string | null {
  let found: string | null = null;
  const names: string[] = [];
  visit(document, {
    Argument: { enter: (node) => void names.push(node.name.value), leave: () => void names.pop() },
    ObjectField: { enter: (node) => void names.push(node.name.value), leave: () => void names.pop() },
    StringValue(node) {
      if (found === null && node.value.includes('\u0000')) found = names.join('.') || 'query';
    },
  });
  return found === null ? null : `The request failed validation: ${nulViolation(found)}.`;
}
