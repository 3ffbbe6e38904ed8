/**
 * docs/architecture.md is the repository's account of how Gantry is built: the files it cites
 * must exist, its links must resolve, and the dependency rules it states as holding must hold.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import {
  floorOf,
  folderLoops,
  importEdges,
  importLoops,
  longFiles,
  upwardImports,
  type ImportEdge,
} from '../scripts/import-graph.js';

const root = join(import.meta.dirname, '..');
const docPath = join(root, 'docs', 'architecture.md');
const doc = readFileSync(docPath, 'utf8');

/** Every file under `dir`, as paths relative to the repository root with `/` separators. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(relative(root, p).split(sep).join('/'));
    }
  };
  walk(join(root, dir));
  return out;
}

/** `test/fuzz-*.test.ts` → a RegExp matching the paths it names. */
const globToRegExp = (glob: string): RegExp =>
  new RegExp(`^${glob.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);

test('every repository path docs/architecture.md cites exists', () => {
  const cited = new Set(
    [...doc.matchAll(/(?<![\w./-])((?:src|test|bench|docs|scripts)\/[\w./*-]*)/g)].map((m) =>
      m[1]!.replace(/[.]+$/, ''),
    ),
  );
  assert.ok(cited.size > 40, `the document cites files (found ${cited.size})`);
  const missing: string[] = [];
  for (const path of cited) {
    if (path.includes('*')) {
      const pattern = globToRegExp(path);
      if (!filesUnder(path.split('/')[0]!).some((f) => pattern.test(f))) missing.push(path);
    } else if (!existsSync(join(root, path))) missing.push(path);
  }
  assert.deepEqual(missing, [], 'paths cited in docs/architecture.md that do not exist');
});

test("every link of docs/architecture.md resolves, to a file or to one of the document's own headings", () => {
  const anchors = new Set(
    [...doc.matchAll(/^#{1,6} (.+)$/gm)].map((m) =>
      m[1]!
        .toLowerCase()
        .replace(/[^\w\s-]/g, '')
        .trim()
        .replace(/\s/g, '-'),
    ),
  );
  const broken: string[] = [];
  for (const [, target] of doc.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z]+:/.test(target!)) continue;
    const [file, anchor] = target!.split('#');
    if (file) {
      if (!existsSync(resolve(dirname(docPath), file))) broken.push(target!);
    } else if (anchor && !anchors.has(anchor)) broken.push(target!);
  }
  assert.deepEqual(broken, []);
});

/** The relative imports (`from '…'`, bare `import '…'`, and `import('…')` types) of each non-test source file, resolved to repository paths. */
function sourceImports(): Array<{ file: string; target: string }> {
  const edges: Array<{ file: string; target: string }> = [];
  for (const file of filesUnder('src')) {
    if (!file.endsWith('.ts') || file.endsWith('.test.ts') || file.endsWith('.d.ts')) continue;
    const text = readFileSync(join(root, file), 'utf8');
    for (const m of text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)'(\.{1,2}\/[^']+)'/g)) {
      edges.push({
        file,
        target: relative(root, resolve(root, dirname(file), m[1]!))
          .split(sep)
          .join('/'),
      });
    }
  }
  return edges;
}

const folderOf = (path: string): string => {
  const parts = path.split('/');
  return parts.length > 2 ? `${parts[0]}/${parts[1]}` : path;
};

test('the domain floor imports nothing else of Gantry', () => {
  const edges = sourceImports();
  assert.ok(
    edges.some((e) => e.file.startsWith('src/domain/')),
    'domain files were read',
  );
  const outward = edges.filter((e) => e.file.startsWith('src/domain/') && !e.target.startsWith('src/domain/'));
  assert.deepEqual(outward, []);
});

test('the store floor imports only itself and the domain: entity types live in src/domain, not in service folders', () => {
  const edges = sourceImports();
  assert.ok(
    edges.some((e) => e.file.startsWith('src/store/')),
    'store files were read',
  );
  const upward = edges.filter(
    (e) => e.file.startsWith('src/store/') && !e.target.startsWith('src/store/') && !e.target.startsWith('src/domain/'),
  );
  assert.deepEqual(upward, []);
});

test('only the composition root and the HTTP transports (http, graphql, the pod proxy) import from src/http, and only src/cli imports from src/cli', () => {
  const edges = sourceImports();
  const intoHttp = edges.filter(
    (e) =>
      e.target.startsWith('src/http/') &&
      !['src/http', 'src/graphql', 'src/proxy'].includes(folderOf(e.file)) &&
      e.file !== 'src/main.ts' &&
      !e.file.startsWith('src/compose/'),
  );
  assert.deepEqual(intoHttp, []);
  const intoCli = edges.filter((e) => e.target.startsWith('src/cli/') && folderOf(e.file) !== 'src/cli');
  assert.deepEqual(intoCli, []);
});

test('the worker library (gantry/worker) imports nothing outside src/worker', () => {
  const outward = sourceImports().filter(
    (e) => e.file.startsWith('src/worker/') && !e.target.startsWith('src/worker/'),
  );
  assert.deepEqual(outward, []);
});

// The floors, loops and file sizes below are read from the syntax trees by scripts/import-graph.ts,
// the script whose figures docs/status.md records, so the test and the figures cannot disagree.

const edgeName = (e: ImportEdge): string => `${e.file} -> ${e.target}`;

test('no source file imports itself back, directly or around a ring of files (type-only imports count)', () => {
  const edges = importEdges();
  assert.ok(edges.length > 1000, `the imports were read (${edges.length})`);
  assert.deepEqual(importLoops(edges), []);
});

test('no folder imports itself back through other folders', () => {
  assert.deepEqual(folderLoops(importEdges()), []);
});

test('no import points up the floors: composition root → transports → services → adapters → domain', () => {
  assert.deepEqual(upwardImports(importEdges()).map(edgeName), []);
});

test('nothing below the composition root imports the config or the event bus: each is handed its slice', () => {
  const rootFiles = /^src\/(config(-[\w-]+)?|events)\.ts$/;
  const below = importEdges().filter((e) => {
    const floor = floorOf(e.file);
    return (
      rootFiles.test(e.target) && floor !== null && floor.name !== 'composition root' && floor.name !== 'command line'
    );
  });
  assert.deepEqual(below.map(edgeName), []);
  // the agent (its own program) reads no server config either
  assert.deepEqual(
    importEdges()
      .filter((e) => e.file.startsWith('src/agent/') && rootFiles.test(e.target))
      .map(edgeName),
    [],
  );
});

test('the transports reach storage only through the services: nothing in http, graphql, ssh or transport imports src/store', () => {
  const edges = importEdges().filter(
    (e) => floorOf(e.file)?.name === 'transports' && e.target.startsWith('src/store/'),
  );
  assert.deepEqual(edges.map(edgeName), []);
});

/**
 * Source files over 400 lines, each with why (docs/architecture.md, "Files over 400 lines", names
 * the same files). Tests and generated files are not counted.
 */
const LONG_FILES: Record<string, string> = {};

test('no source file is over 400 lines but those named with their reason, in this test and in docs/architecture.md', () => {
  const long = longFiles().map((f) => f.file);
  assert.deepEqual(
    long.filter((f) => !(f in LONG_FILES)),
    [],
    'files over 400 lines without a reason',
  );
  assert.deepEqual(
    Object.keys(LONG_FILES).filter((f) => !long.includes(f)),
    [],
    'named as long but no longer are: take them off the list',
  );
  const section = doc.slice(doc.indexOf('### Files over 400 lines'));
  const named = new Set([...section.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]!));
  assert.deepEqual([...named].sort(), Object.keys(LONG_FILES).sort());
});
