import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse, type OperationDefinitionNode } from 'graphql';
import type { GraphqlLimits } from '../transport/services.js';
import { loadConfig } from '../config.js';
import { clientDocuments } from '../../test/fixtures/client-graphql-documents.js';
import { mostMergedSelections } from './document-cost.js';
import { documentRefusal, STRUCTURAL_LIMITS, textRefusal } from './document-limits.js';
import { allResolvers } from './resolvers.js';
import { createSchema } from './schema.js';

const schema = createSchema(allResolvers());
const defaults = loadConfig({ env: { GANTRY_DATA_DIR: '/nonexistent-gantry-test' } }).graphql;
const small: GraphqlLimits = {
  maxDocumentBytes: 1000,
  maxDepth: 4,
  maxAliases: 3,
  maxFields: 12,
  maxRootFields: 2,
  maxCost: 40,
};

const refusalOf = (query: string, limits: GraphqlLimits = small): string | null => {
  const r = documentRefusal(parse(query), schema, limits);
  return 'refusal' in r ? r.refusal : null;
};
const times = (n: number, f: (i: number) => string): string => Array.from({ length: n }, (_, i) => f(i)).join(' ');

test('every document runpod-python and runpodctl send is within half of each default bound', () => {
  for (const [name, query] of Object.entries(clientDocuments)) {
    assert.equal(textRefusal(query, defaults), null, name);
    assert.ok(Buffer.byteLength(query) * 2 <= defaults.maxDocumentBytes, name);
    const r = documentRefusal(parse(query), schema, defaults);
    assert.ok('measure' in r, `${name}: ${'refusal' in r ? r.refusal : ''}`);
    const [op] = r.measure.operations;
    assert.ok(op, name);
    assert.ok(op.depth * 2 <= defaults.maxDepth, `${name} depth ${op.depth}`);
    assert.ok(op.aliases * 2 <= defaults.maxAliases, `${name} aliases ${op.aliases}`);
    assert.ok(op.fields * 2 <= defaults.maxFields, `${name} fields ${op.fields}`);
    assert.ok(op.topFields * 2 <= defaults.maxRootFields, `${name} root fields ${op.topFields}`);
    assert.ok(op.cost * 2 <= defaults.maxCost, `${name} cost ${op.cost}`);
  }
});

test('a document over the byte bound is refused on its length, before the parser sees it', () => {
  // Not even valid GraphQL: a parser-first check would answer a syntax error instead.
  const huge = `{ myself ${'x'.repeat(300_000)} !!!`;
  assert.match(
    textRefusal(huge, defaults) ?? '',
    /is 300013 bytes; this server accepts documents of at most 65536 bytes \(graphql\.maxDocumentBytes\)/,
  );
  // Bytes, not characters: 400 three-byte characters are 1 200 bytes.
  assert.match(textRefusal(`{ myself { id } } # ${'€'.repeat(400)}`, small) ?? '', /is 1220 bytes/);
  assert.equal(textRefusal(`{ myself { id } } # ${'€'.repeat(300)}`, small), null);
});

test('brackets nested past twice maxDepth are refused from the token stream, with no parser recursion', () => {
  assert.equal(textRefusal(`${'{ a '.repeat(8)}${'}'.repeat(8)}`, small), null);
  assert.match(
    textRefusal(`${'{ a '.repeat(9)}${'}'.repeat(9)}`, small) ?? '',
    /more than 8 levels deep; selections may nest at most 4 fields deep/,
  );
  assert.match(
    textRefusal(`{ endpoint(id: ${'['.repeat(20_000)}${']'.repeat(20_000)}) { id } }`, defaults) ?? '',
    /more than 30 levels deep/,
  );
  assert.equal(
    textRefusal('{ myself { id "unterminated', small),
    null,
    'a syntax error is left for the parser to word',
  );
});

test('depth, aliases, fields, root fields and cost each refuse one past their bound and pass at it', () => {
  assert.equal(refusalOf('{ myself { endpoints { template { id } } } }'), null);
  assert.match(
    refusalOf('{ myself { endpoints { template { env { key } } } } }') ?? '',
    /The query nests fields 5 deep; at most 4 levels are allowed \(graphql\.maxDepth\)/,
  );
  assert.equal(
    refusalOf('query Q { a: myself { id } b: myself { id } c: gpuTypes { id } }', { ...small, maxRootFields: 3 }),
    null,
  );
  assert.match(
    refusalOf('{ a: myself { id } b: myself { x: id y: id } }') ?? '',
    /The query uses 4 aliases, fragments expanded; at most 3/,
  );
  assert.match(
    refusalOf(`{ myself { ${times(12, () => 'id')} } }`) ?? '',
    /The query selects 13 fields, fragments expanded; at most 12/,
  );
  // Every operation of a document is validated, though only one runs: their fields add up.
  assert.match(
    refusalOf(`query A { myself { ${times(6, () => 'id')} } } query B { myself { ${times(6, () => 'id')} } }`) ?? '',
    /The GraphQL document selects 14 fields; at most 12/,
  );
  assert.match(
    refusalOf('mutation M { a: deleteEndpoint(id: "1") b: deleteEndpoint(id: "2") c: deleteEndpoint(id: "3") }') ?? '',
    /The mutation "M" has 3 root fields, fragments expanded; at most 2 are allowed in one request/,
  );
  // A list of objects multiplies what it selects by 10: 1 + 10 × 3 = 31.
  assert.equal(refusalOf('{ gpuTypes { id displayName memoryInGb } }', { ...small, maxCost: 31 }), null);
  assert.match(
    refusalOf('{ gpuTypes { id displayName memoryInGb } }', { ...small, maxCost: 30 }) ?? '',
    /computed cost of 31 .*; at most 30 is allowed \(graphql\.maxCost\)/,
  );
  // Lists of lists multiply again: myself 1 + endpoints (1 + 10 × pods (1 + 10 × 2)) = 212, from five fields.
  assert.match(
    refusalOf('{ myself { endpoints { pods { id desiredStatus } } } }', { ...small, maxCost: 211 }) ?? '',
    /computed cost of 212/,
  );
});

test('fields reached through fragments count once per spread, so fragments cannot hide a bomb', () => {
  // F0 selects 2 fields, each F(i) spreads F(i-1) twice: F29 expands to 2^30 fields. It is measured
  // arithmetically (each fragment once), never expanded.
  const bomb = `{ myself { ...F29 } } fragment F0 on User { id pubKey } ${times(29, (i) => `fragment F${i + 1} on User { ...F${i} ...F${i} }`)}`;
  assert.match(
    refusalOf(bomb, defaults) ?? '',
    new RegExp(`The query selects ${2 ** 30 + 1} fields, fragments expanded; at most 1000`),
  );
  const aliased = `{ myself { ...A ...A } } fragment A on User { a: id b: id }`;
  assert.match(refusalOf(aliased) ?? '', /uses 4 aliases, fragments expanded/);
  const rootSpread = `mutation { ...M } fragment M on Mutation { a: deleteEndpoint(id: "1") b: deleteEndpoint(id: "2") c: deleteEndpoint(id: "3") }`;
  assert.match(refusalOf(rootSpread) ?? '', /has 3 root fields/);
  assert.match(
    refusalOf(
      '{ myself { ...Unused } } fragment Unused on User { id } fragment Big on User { a: id b: id c: id d: id }',
    ) ?? '',
    /Fragment "Big" uses 4 aliases/,
  );
});

test('a fragment cycle is refused, naming it, before anything expands it', () => {
  assert.equal(
    refusalOf('fragment A on User { ...B } fragment B on User { ...A } { myself { ...A } }'),
    'Fragment "A" spreads itself (A → B → A); a fragment cycle never ends.',
  );
  assert.match(refusalOf('fragment S on User { id ...S } { myself { ...S } }') ?? '', /S → S/);
});

test('operations, fragments, directives and variables are bounded by count', () => {
  const { operations, fragments, directives, variables } = STRUCTURAL_LIMITS;
  assert.equal(
    refusalOf(
      times(operations, (i) => `query Q${i} { myself { id } }`),
      defaults,
    ),
    null,
  );
  assert.match(
    refusalOf(
      times(operations + 1, (i) => `query Q${i} { myself { id } }`),
      defaults,
    ) ?? '',
    /holds 11 operations; at most 10/,
  );
  assert.match(
    refusalOf(`{ myself { id } } ${times(fragments + 1, (i) => `fragment F${i} on User { id }`)}`, defaults) ?? '',
    /defines 101 fragments; at most 100/,
  );
  assert.match(
    refusalOf(`{ myself ${'@skip(if: false) '.repeat(directives + 1)}{ id } }`, defaults) ?? '',
    /uses 51 directives; at most 50/,
  );
  assert.equal(refusalOf(`{ myself ${'@skip(if: false) '.repeat(directives)}{ id } }`, defaults), null);
  assert.match(
    refusalOf(`query Q(${times(variables + 1, (i) => `$v${i}: Int`)}) { myself { id } }`, defaults) ?? '',
    /defines 51 variables; at most 50/,
  );
});

test('one field selected over and over is refused: validation compares those selections pairwise', () => {
  const { sameField } = STRUCTURAL_LIMITS;
  assert.equal(refusalOf(`{ ${times(sameField, () => 'myself { id }')} }`, defaults), null);
  assert.match(
    refusalOf(`{ ${times(sameField + 1, () => 'myself { id }')} }`, defaults) ?? '',
    /selects one field \(the same response name at the same place\) 11 times/,
  );
  // Merged through duplicated parents and fragments: 4 × 3 selections of myself.endpoints.id.
  const merged = parse(
    `{ ${times(4, () => 'myself { endpoints { id } ...E }')} } fragment E on User { endpoints { id id } }`,
  );
  assert.equal(mostMergedSelections(merged, (merged.definitions[0] as OperationDefinitionNode).selectionSet), 12);
});
