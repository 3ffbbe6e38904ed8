import { buildSchema, type GraphQLFieldResolver, type GraphQLScalarType, type GraphQLSchema } from 'graphql';
import { accountTypeDefs } from './account-type-defs.js';
import { catalogTypeDefs } from './catalog-type-defs.js';
import { clusterTypeDefs } from './cluster-type-defs.js';
import { endpointTypeDefs } from './endpoint-type-defs.js';
import { interruptibleTypeDefs } from './interruptible-type-defs.js';
import { parseFlashBoot, parseFlashBootLiteral } from './flash-boot-type.js';
import { podEditTypeDefs } from './pod-edit-type-defs.js';
import { podTypeDefs } from './pod-type-defs.js';
import { rootTypeDefs } from './root-type-defs.js';
import { templateTypeDefs } from './template-type-defs.js';
import { volumeTypeDefs } from './volume-type-defs.js';

/**
 * The GraphQL management API, in the shape existing clients (runpod-python, runpodctl) query it.
 * Input types are liberal: every field is nullable so that a missing one is answered with a
 * sentence from the service rather than a type error, and fields newer clients send but Gantry
 * does not act on are accepted (and refused by the resolver only when they ask for something).
 */
const typeDefs = [
  rootTypeDefs,
  endpointTypeDefs,
  templateTypeDefs,
  accountTypeDefs,
  catalogTypeDefs,
  podTypeDefs,
  podEditTypeDefs,
  volumeTypeDefs,
  clusterTypeDefs,
  interruptibleTypeDefs,
].join('');

/**
 * Resolvers by type and field, attached to the SDL above. Each resolver types its own source and
 * arguments; a map of them can only say `any` there (function parameters are contravariant).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ResolverMap<TContext> = Record<string, Record<string, GraphQLFieldResolver<any, TContext, any>>>;

/** Builds the executable schema: the SDL, its resolvers, and the FlashBootType scalar's parsing. */
export function createSchema<TContext>(resolvers: ResolverMap<TContext>): GraphQLSchema {
  const schema = buildSchema(typeDefs);
  for (const [typeName, fields] of Object.entries(resolvers)) {
    const type = schema.getType(typeName);
    if (!type || !('getFields' in type)) throw new Error(`GraphQL resolvers name unknown type ${typeName}`);
    const defined = type.getFields() as Record<string, { resolve?: unknown }>;
    for (const [fieldName, resolve] of Object.entries(fields)) {
      const field = defined[fieldName];
      if (!field) throw new Error(`GraphQL resolvers name unknown field ${typeName}.${fieldName}`);
      field.resolve = resolve;
    }
  }
  const flashBoot = schema.getType('FlashBootType') as GraphQLScalarType;
  flashBoot.parseValue = parseFlashBoot;
  flashBoot.parseLiteral = parseFlashBootLiteral;
  flashBoot.serialize = (v: unknown) => parseFlashBoot(v);
  return schema;
}
