/**
 * What a GraphQL request without an API key may ask (config `graphql.anonymousCatalog`): a query
 * whose root fields are all the catalog's — GPU types with their prices and stock, data centers,
 * countries, CPU flavors, serverless GPU pools — none of which holds anything of an account. The
 * platform answers these without a key, and dstack's offer lister (gpuhunt) sends none.
 */
import {
  Kind,
  OperationTypeNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

/** The root fields of the catalog. */
export const CATALOG_ROOT_FIELDS: ReadonlySet<string> = new Set([
  'gpuTypes',
  'dataCenters',
  'countryCodes',
  'cpuFlavors',
  'serverlessGpuPools',
  '__typename',
]);

/**
 * Null when the operation `operationName` of `document` (parsed, not yet validated) is a query of
 * catalog root fields only, fragments followed; else why a key is needed.
 */
export function anonymousRefusal(document: DocumentNode, operationName: string | undefined): string | null {
  const operations = document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
  const operation =
    operationName === undefined
      ? operations.length === 1
        ? operations[0]
        : undefined
      : operations.find((o) => o.name?.value === operationName);
  if (!operation) return 'name the operation to run (operationName)';
  if (operation.operation !== OperationTypeNode.QUERY) return `a ${operation.operation} needs a key`;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const seen = new Set<string>();
  const outside = (set: SelectionSetNode): string | null => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        if (!CATALOG_ROOT_FIELDS.has(selection.name.value)) return `"${selection.name.value.slice(0, 64)}" needs a key`;
        continue;
      }
      if (selection.kind === Kind.INLINE_FRAGMENT) {
        const found = outside(selection.selectionSet);
        if (found) return found;
        continue;
      }
      const name = selection.name.value;
      if (seen.has(name)) continue;
      seen.add(name);
      const fragment = fragments.get(name);
      if (!fragment) return `fragment "${name.slice(0, 64)}" is not defined`;
      const found = outside(fragment.selectionSet);
      if (found) return found;
    }
    return null;
  };
  return outside(operation.selectionSet);
}
