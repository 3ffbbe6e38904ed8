import {
  getNamedType,
  getNullableType,
  isCompositeType,
  isListType,
  isObjectType,
  isInterfaceType,
  Kind,
  OperationTypeNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLSchema,
  type GraphQLType,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

/**
 * How much a list field is assumed to hold when it multiplies the cost of what it selects: lists
 * have no page size here, so a guess at a typical account's (endpoints, pods, GPU types).
 */
export const LIST_COST_FACTOR = 10;

/** What running a selection set costs, fragments expanded. */
export interface SelectionMeasure {
  /** Field selections, fragments expanded (a fragment spread twice counts twice). */
  fields: number;
  /** Fragment spreads, fragments expanded. */
  spreads: number;
  /** Aliased field selections, fragments expanded. */
  aliases: number;
  /** Deepest field nesting; a field without a selection is 1. */
  depth: number;
  /** Fields directly in the set (through fragments), i.e. the root fields of an operation's set. */
  topFields: number;
  /** Each field costs 1; a list field of objects multiplies what it selects by LIST_COST_FACTOR. */
  cost: number;
}

interface OperationMeasure extends SelectionMeasure {
  node: OperationDefinitionNode;
  name: string | undefined;
  operation: 'query' | 'mutation' | 'subscription';
}

/** A document's measures: each operation and fragment expanded, and what is written once. */
export interface DocumentMeasure {
  operations: OperationMeasure[];
  /** Every fragment definition's own measure (an unused one is still validated). */
  fragments: Array<SelectionMeasure & { name: string; node: FragmentDefinitionNode }>;
  /** A fragment cycle, as the names along it (`['A', 'B', 'A']`), or null. */
  fragmentCycle: string[] | null;
  /** Field selections as written, over the whole document. */
  writtenFields: number;
  directives: number;
  /** Variable definitions, over every operation. */
  variables: number;
}

const EMPTY: SelectionMeasure = { fields: 0, spreads: 0, aliases: 0, depth: 0, topFields: 0, cost: 0 };

/** How many times a field's type multiplies its selection: once per list wrapper. */
function listMultiplier(type: GraphQLType): number {
  let factor = 1;
  let t: GraphQLType = getNullableType(type);
  while (isListType(t)) {
    factor *= LIST_COST_FACTOR;
    t = getNullableType(t.ofType);
  }
  return factor;
}

/**
 * Measures a document against the schema without validating it: unknown fields and types count as
 * a field of cost 1 (validation reports them later). Every fragment is measured once and reused,
 * so a "fragment bomb" (each fragment spreading the previous one twice) is measured in linear time,
 * its sizes growing as numbers, not as work. A cycle is recorded and expands to nothing.
 */
export function measureDocument(document: DocumentNode, schema: GraphQLSchema): DocumentMeasure {
  const definitions = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions)
    if (d.kind === Kind.FRAGMENT_DEFINITION && !definitions.has(d.name.value)) definitions.set(d.name.value, d);
  const measured = new Map<string, SelectionMeasure>();
  const visiting: string[] = [];
  let fragmentCycle: string[] | null = null;

  const typeNamed = (name: string | undefined): GraphQLCompositeType | undefined => {
    const type = name === undefined ? undefined : schema.getType(name);
    return type && isCompositeType(type) ? type : undefined;
  };

  const fragment = (name: string): SelectionMeasure => {
    const done = measured.get(name);
    if (done) return done;
    const def = definitions.get(name);
    if (!def) return EMPTY;
    const at = visiting.indexOf(name);
    if (at >= 0) {
      fragmentCycle ??= [...visiting.slice(at), name];
      return EMPTY;
    }
    visiting.push(name);
    const measure = selections(def.selectionSet, typeNamed(def.typeCondition.name.value));
    visiting.pop();
    measured.set(name, measure);
    return measure;
  };

  function selections(set: SelectionSetNode, parent: GraphQLCompositeType | undefined): SelectionMeasure {
    const sum = { ...EMPTY };
    const add = (m: SelectionMeasure): void => {
      sum.fields += m.fields;
      sum.spreads += m.spreads;
      sum.aliases += m.aliases;
      sum.depth = Math.max(sum.depth, m.depth);
      sum.topFields += m.topFields;
      sum.cost += m.cost;
    };
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        const def =
          parent && (isObjectType(parent) || isInterfaceType(parent))
            ? parent.getFields()[selection.name.value]
            : undefined;
        const child = selection.selectionSet
          ? selections(selection.selectionSet, def ? typeNamed(getNamedType(def.type).name) : undefined)
          : EMPTY;
        const factor = def && selection.selectionSet ? listMultiplier(def.type) : 1;
        add({
          fields: 1 + child.fields,
          spreads: child.spreads,
          aliases: (selection.alias ? 1 : 0) + child.aliases,
          depth: 1 + child.depth,
          topFields: 1,
          cost: 1 + factor * child.cost,
        });
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        add(
          selections(
            selection.selectionSet,
            selection.typeCondition ? typeNamed(selection.typeCondition.name.value) : parent,
          ),
        );
      } else {
        const spread = fragment(selection.name.value);
        add({ ...spread, spreads: 1 + spread.spreads });
      }
    }
    return sum;
  }

  const operations: OperationMeasure[] = [];
  let variables = 0;
  for (const d of document.definitions) {
    if (d.kind !== Kind.OPERATION_DEFINITION) continue;
    variables += d.variableDefinitions?.length ?? 0;
    const root =
      d.operation === OperationTypeNode.QUERY
        ? schema.getQueryType()
        : d.operation === OperationTypeNode.MUTATION
          ? schema.getMutationType()
          : schema.getSubscriptionType();
    operations.push({
      node: d,
      name: d.name?.value,
      operation: d.operation,
      ...selections(d.selectionSet, root ?? undefined),
    });
  }
  const fragments = [...definitions].map(([name, node]) => ({ name, node, ...fragment(name) }));

  let writtenFields = 0;
  let directives = 0;
  // An explicit stack: the document's nesting is bounded before parsing, but this walk need not rely on it.
  const stack: unknown[] = [document];
  while (stack.length > 0) {
    const node = stack.pop() as { kind?: string; directives?: readonly unknown[] } & Record<string, unknown>;
    if (node.kind === Kind.FIELD) writtenFields += 1;
    if (node.kind === Kind.DIRECTIVE) directives += 1;
    for (const key of ['definitions', 'selectionSet', 'selections', 'directives'] as const) {
      const child = node[key];
      if (Array.isArray(child)) for (const c of child) stack.push(c);
      else if (child && typeof child === 'object') stack.push(child);
    }
  }
  return { operations, fragments, fragmentCycle, writtenFields, directives, variables };
}

/**
 * The most field selections that merge into one response path (`myself.endpoints.id`) under
 * `root`, fragments expanded. Validation compares the selections of one path pairwise — quadratic
 * in this number — so it is bounded apart from the total. It walks the expansion: call it only once
 * the expanded sizes are known to be bounded and the fragments to be free of cycles.
 */
export function mostMergedSelections(document: DocumentNode, root: SelectionSetNode): number {
  const fragments = new Map<string, SelectionSetNode>();
  for (const d of document.definitions)
    if (d.kind === Kind.FRAGMENT_DEFINITION && !fragments.has(d.name.value))
      fragments.set(d.name.value, d.selectionSet);
  const counts = new Map<string, number>();
  let most = 0;
  const stack: Array<{ set: SelectionSetNode; path: string }> = [{ set: root, path: '' }];
  while (stack.length > 0) {
    const { set, path } = stack.pop()!;
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        const at = `${path}.${(selection.alias ?? selection.name).value}`;
        const count = (counts.get(at) ?? 0) + 1;
        counts.set(at, count);
        most = Math.max(most, count);
        if (selection.selectionSet) stack.push({ set: selection.selectionSet, path: at });
      } else if (selection.kind === Kind.INLINE_FRAGMENT) stack.push({ set: selection.selectionSet, path });
      else {
        const spread = fragments.get(selection.name.value);
        if (spread) stack.push({ set: spread, path });
      }
    }
  }
  return most;
}
