/**
 * Adding a runtime is one folder and one line in src/runtime/registry.ts (docs/runtimes.md
 * "Adding a runtime"): no code outside a runtime's folder and the registry branches on a runtime's
 * kind. What depends on the runtime asks its module's declarations (src/runtime/runtime-module.ts).
 * Read on the syntax tree (the TypeScript compiler's), not as text: a message may still name a
 * kind; a comparison or a `case` may not.
 *
 * `RUNTIME_KINDS_ROOT=/path/to/checkout` reads another checkout's `src/` against this registry
 * (to show what the rule finds in a tree from before it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { runtimeModules } from '../src/runtime/registry.js';
import './support/runtimes.js';

const repo = join(import.meta.dirname, '..');
const root = resolve(process.env.RUNTIME_KINDS_ROOT ?? repo);
const REGISTRY = 'src/runtime/registry.ts';
/** Where test-only runtimes are registered (the fake). */
const TEST_REGISTRY = 'test/support/runtimes.ts';

const parse = (path: string): ts.SourceFile =>
  ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);

/** The folders of the modules a registry file imports (`…/module.js`), relative to the repository. */
function moduleFolders(registryPath: string): string[] {
  const file = parse(join(repo, registryPath));
  const folders: string[] = [];
  for (const statement of file.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    const specifier = statement.moduleSpecifier.text;
    if (!/\/module\.js$/.test(specifier)) continue;
    const folder = dirname(resolve(dirname(join(repo, registryPath)), specifier));
    folders.push(relative(repo, folder).split(sep).join('/'));
  }
  return folders;
}

/** Every `.ts` file under `dir` but the tests, relative to `base` with `/` separators. */
function sourcesUnder(base: string, dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts'))
        out.push(relative(base, p).split(sep).join('/'));
    }
  };
  walk(join(base, dir));
  return out;
}

const COMPARISONS = new Set([
  ts.SyntaxKind.EqualsEqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsEqualsToken,
  ts.SyntaxKind.EqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsToken,
]);

const literalText = (node: ts.Node): string | null =>
  ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) ? node.text : null;

/** `runtime.kind`, `config.runtime.kind`, `services.runtime.name`, `section.kind` of a runtime section… */
const isRuntimeKindRead = (node: ts.Node): boolean =>
  ts.isPropertyAccessExpression(node) &&
  (node.name.text === 'kind' || node.name.text === 'name') &&
  /runtime/i.test(node.expression.getText());

/** Where the file branches on a runtime's kind: `line: code` for each. */
function kindBranches(path: string, kinds: ReadonlySet<string>): string[] {
  const file = parse(path);
  const found: string[] = [];
  const report = (node: ts.Node): void => {
    const { line } = file.getLineAndCharacterOfPosition(node.getStart(file));
    found.push(`${line + 1}: ${node.getText(file).replace(/\s+/g, ' ').slice(0, 120)}`);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isBinaryExpression(node) && COMPARISONS.has(node.operatorToken.kind)) {
      const sides = [node.left, node.right];
      const literals = sides.map(literalText);
      const namesKind = literals.some((text) => text !== null && kinds.has(text));
      const readsKind = sides.some(isRuntimeKindRead) && literals.some((text) => text !== null);
      if (namesKind || readsKind) report(node);
    } else if (ts.isCaseClause(node)) {
      const text = literalText(node.expression);
      if (text !== null && kinds.has(text)) report(node.expression);
    } else if (ts.isSwitchStatement(node) && isRuntimeKindRead(node.expression)) {
      report(node.expression);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

const kinds = new Set(runtimeModules().map((m) => m.kind));
const runtimeFolders = [...moduleFolders(REGISTRY), ...moduleFolders(TEST_REGISTRY)];
const inRuntimeFolder = (path: string): boolean =>
  path === REGISTRY || runtimeFolders.some((folder) => path.startsWith(`${folder}/`));

test('the registry lists every runtime module, each in a folder of its own', () => {
  assert.ok(
    kinds.size >= 4,
    `process, docker, fleet and the test-only fake are registered (found ${[...kinds].join(', ')})`,
  );
  assert.equal(
    new Set(runtimeFolders).size,
    runtimeFolders.length,
    `one folder per runtime: ${runtimeFolders.join(', ')}`,
  );
  assert.equal(
    runtimeFolders.length,
    kinds.size,
    `a module per kind: ${runtimeFolders.join(', ')} for ${[...kinds].join(', ')}`,
  );
});

test('no code outside a runtime’s folder and the registry branches on a runtime’s kind', () => {
  const branches: string[] = [];
  for (const path of sourcesUnder(root, 'src')) {
    if (inRuntimeFolder(path)) continue;
    for (const where of kindBranches(join(root, path), kinds)) branches.push(`${path}:${where}`);
  }
  assert.deepEqual(
    branches,
    [],
    `ask the runtime's module (src/runtime/runtime-module.ts: capabilities, hostSource, isolation, …) instead:\n${branches.join('\n')}`,
  );
});

test('the rule finds a comparison with a kind, a comparison of a runtime’s kind and a case of a kind, not a message', () => {
  const sample = join(repo, 'test/fixtures/runtime-kind-branches.ts');
  const found = kindBranches(sample, kinds);
  assert.deepEqual(
    found.map((f) => f.split(':')[0]),
    ['4', '5', '7', '10'],
    found.join('\n'),
  );
});

/** The first word of each `describeRuntime('<kind> …', …)` in the test files under `dir`. */
function contractRuns(dir: string): string[] {
  const runs: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.test.ts')) {
        const visit = (node: ts.Node): void => {
          if (
            ts.isCallExpression(node) &&
            ts.isIdentifier(node.expression) &&
            node.expression.text === 'describeRuntime'
          ) {
            const title = node.arguments[0] && literalText(node.arguments[0]);
            if (title) runs.push(title.split(' ')[0]!);
          }
          ts.forEachChild(node, visit);
        };
        visit(parse(p));
      }
    }
  };
  walk(join(repo, dir));
  return runs;
}

test('the runtime contract suite runs over every registered runtime', () => {
  const covered = new Set([...contractRuns('src'), ...contractRuns('test')]);
  assert.deepEqual(
    [...kinds].filter((kind) => !covered.has(kind)),
    [],
    'each runtime runs describeRuntime (src/runtime/runtime-contract.ts) in a test of its own',
  );
});
