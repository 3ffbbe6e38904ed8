import { getOperationAST, Kind, type DocumentNode } from 'graphql';

/**
 * Root fields of the platform's schema that Gantry has no counterpart for, by the area they
 * belong to: runpodctl's model repository (`runpodctl model …`) and hub (`runpodctl hub …`).
 * A document that selects one is answered with one clear error naming it, rather than the
 * schema errors its unknown input types and fields would otherwise give.
 */
const UNSUPPORTED: Readonly<Record<string, string>> = {
  addModelToRepo: 'Model repository operation',
  myModels: 'Model repository operation',
  myModel: 'Model repository operation',
  removeModelFromRepo: 'Model repository operation',
  createModelRepoUpload: 'Model repository operation',
  completeModelRepoUpload: 'Model repository operation',
  updateModelVersionStatus: 'Model repository operation',
  listings: 'Hub operation',
  listing: 'Hub operation',
  listingFromRepo: 'Hub operation',
};

/** The refusal for the first unsupported root field the operation to run selects, or null. */
export function unsupportedOperation(document: DocumentNode, operationName: string | undefined): string | null {
  const operation = getOperationAST(document, operationName);
  if (!operation) return null;
  for (const selection of operation.selectionSet.selections) {
    if (selection.kind !== Kind.FIELD) continue;
    const area = Object.hasOwn(UNSUPPORTED, selection.name.value) ? UNSUPPORTED[selection.name.value] : undefined;
    if (area) return `${area} (${selection.name.value}) is not supported by Gantry.`;
  }
  return null;
}
