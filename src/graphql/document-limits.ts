import { GraphQLError, Kind, Lexer, Source, TokenKind, type DocumentNode, type GraphQLSchema } from 'graphql';
import type { GraphqlLimits } from '../transport/services.js';
import {
  LIST_COST_FACTOR,
  measureDocument,
  mostMergedSelections,
  type DocumentMeasure,
  type SelectionMeasure,
} from './document-cost.js';

/**
 * Bounds on the parts of a document the settings do not name. No client comes near them
 * (runpod-python and runpodctl send one operation, at most one variable, no fragments or
 * directives); they only stop a document from making validation do work in proportion to them.
 */
export const STRUCTURAL_LIMITS = {
  operations: 10,
  fragments: 100,
  directives: 50,
  variables: 50,
  sameField: 10,
} as const;

/** Deepest nesting of `{`, `[` and `(` the parser is handed: selections plus argument values. */
const maxNesting = (limits: GraphqlLimits): number => 2 * limits.maxDepth;

/**
 * Refuses a document by its text alone, before it is parsed — for a huge or deeply nested
 * document the parser itself is the cost (it recurses, and a few thousand levels overflow the
 * stack). One pass of the lexer, which neither allocates an AST nor recurses. Answers a sentence
 * naming the bound, or null; a syntax error is left for the parser to report.
 */
export function textRefusal(query: string, limits: GraphqlLimits): string | null {
  // UTF-8 is at most 3 bytes per UTF-16 unit: most documents are judged without counting bytes.
  if (query.length * 3 > limits.maxDocumentBytes) {
    const bytes = Buffer.byteLength(query, 'utf8');
    if (bytes > limits.maxDocumentBytes)
      return `The GraphQL document is ${bytes} bytes; this server accepts documents of at most ${limits.maxDocumentBytes} bytes (graphql.maxDocumentBytes).`;
  }
  const deepest = maxNesting(limits);
  const lexer = new Lexer(new Source(query));
  let nesting = 0;
  try {
    for (let token = lexer.advance(); token.kind !== TokenKind.EOF; token = lexer.advance()) {
      if (token.kind === TokenKind.BRACE_L || token.kind === TokenKind.BRACKET_L || token.kind === TokenKind.PAREN_L) {
        if (++nesting > deepest)
          return `The GraphQL document nests braces, brackets and parentheses more than ${deepest} levels deep; selections may nest at most ${limits.maxDepth} fields deep (graphql.maxDepth).`;
      } else if (
        token.kind === TokenKind.BRACE_R ||
        token.kind === TokenKind.BRACKET_R ||
        token.kind === TokenKind.PAREN_R
      )
        nesting -= 1;
    }
  } catch (err) {
    if (err instanceof GraphQLError) return null;
    throw err;
  }
  return null;
}

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** Compares one operation's or fragment's measure with the limits; answers the first bound it passes. */
function selectionRefusal(what: string, m: SelectionMeasure, limits: GraphqlLimits): string | null {
  if (m.depth > limits.maxDepth)
    return `${what} nests fields ${m.depth} deep; at most ${limits.maxDepth} levels are allowed (graphql.maxDepth).`;
  if (m.aliases > limits.maxAliases)
    return `${what} uses ${m.aliases} aliases, fragments expanded; at most ${limits.maxAliases} are allowed (graphql.maxAliases).`;
  if (m.fields > limits.maxFields)
    return `${what} selects ${m.fields} fields, fragments expanded; at most ${limits.maxFields} are allowed (graphql.maxFields).`;
  if (m.spreads > limits.maxFields)
    return `${what} spreads fragments ${m.spreads} times, fragments expanded; at most ${limits.maxFields} are allowed (graphql.maxFields).`;
  if (m.cost > limits.maxCost)
    return `${what} has a computed cost of ${m.cost} (each field 1, a list multiplying what it selects by ${LIST_COST_FACTOR}); at most ${limits.maxCost} is allowed (graphql.maxCost).`;
  return null;
}

/**
 * Refuses a parsed document that would cost too much to validate or run, before either happens;
 * otherwise answers its measure (the rate limiter charges the root fields of the operation run).
 */
export function documentRefusal(
  document: DocumentNode,
  schema: GraphQLSchema,
  limits: GraphqlLimits,
): { refusal: string } | { measure: DocumentMeasure } {
  let operations = 0;
  let fragments = 0;
  for (const d of document.definitions) {
    if (d.kind === Kind.OPERATION_DEFINITION) operations += 1;
    else if (d.kind === Kind.FRAGMENT_DEFINITION) fragments += 1;
  }
  if (operations > STRUCTURAL_LIMITS.operations)
    return {
      refusal: `The GraphQL document holds ${operations} operations; at most ${STRUCTURAL_LIMITS.operations} are allowed in one document (one of them runs).`,
    };
  // Checked before measuring: fragments spreading each other are measured recursively.
  if (fragments > STRUCTURAL_LIMITS.fragments)
    return {
      refusal: `The GraphQL document defines ${fragments} fragments; at most ${STRUCTURAL_LIMITS.fragments} are allowed.`,
    };

  const measure = measureDocument(document, schema);
  if (measure.fragmentCycle)
    return {
      refusal: `Fragment "${measure.fragmentCycle[0]}" spreads itself (${measure.fragmentCycle.join(' → ')}); a fragment cycle never ends.`,
    };
  if (measure.directives > STRUCTURAL_LIMITS.directives)
    return {
      refusal: `The GraphQL document uses ${plural(measure.directives, 'directive')}; at most ${STRUCTURAL_LIMITS.directives} are allowed.`,
    };
  if (measure.variables > STRUCTURAL_LIMITS.variables)
    return {
      refusal: `The GraphQL document defines ${plural(measure.variables, 'variable')}; at most ${STRUCTURAL_LIMITS.variables} are allowed.`,
    };
  const definitions = [
    ...measure.operations.map((op) => ({
      what: op.name ? `The ${op.operation} "${op.name}"` : `The ${op.operation}`,
      m: op,
      root: op.node.selectionSet,
      op,
    })),
    ...measure.fragments.map((f) => ({ what: `Fragment "${f.name}"`, m: f, root: f.node.selectionSet, op: null })),
  ];
  for (const { what, m, op } of definitions) {
    if (op && op.topFields > limits.maxRootFields)
      return {
        refusal: `${what} has ${op.topFields} root fields, fragments expanded; at most ${limits.maxRootFields} are allowed in one request (graphql.maxRootFields).`,
      };
    const refusal = selectionRefusal(what, m, limits);
    if (refusal) return { refusal };
  }
  if (measure.writtenFields > limits.maxFields)
    return {
      refusal: `The GraphQL document selects ${measure.writtenFields} fields; at most ${limits.maxFields} are allowed (graphql.maxFields).`,
    };
  // Only now is the expansion known to be small enough to walk.
  for (const { what, root } of definitions) {
    const merged = mostMergedSelections(document, root);
    if (merged > STRUCTURAL_LIMITS.sameField)
      return {
        refusal: `${what} selects one field (the same response name at the same place) ${merged} times, fragments expanded; at most ${STRUCTURAL_LIMITS.sameField} are allowed.`,
      };
  }
  return { measure };
}
