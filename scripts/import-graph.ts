/**
 * Figures of the source tree's shape, for docs/status.md and docs/architecture.md:
 *
 * - import loops: strongly connected groups of files (src/ and console/src/, tests aside) that
 *   import each other, directly or around a ring; type-only imports counted, and shown apart;
 * - upward imports: a file importing from a floor above its own (docs/architecture.md, "The
 *   floors"): composition root > transports > services > adapters > domain;
 * - files over 400 lines (tests and generated files aside);
 * - a worker launch's trip: the calls made from `LaunchedWorkers.launch` followed through Gantry's
 *   own source (the compiler's call hierarchy, a call into an interface stopping at the interface),
 *   the files they cross and how often a call climbs to a floor above the caller's.
 *
 * Usage: node --import tsx scripts/import-graph.ts [--json] [--trace file.ts#Class.method] [--depth N]
 */
import ts from 'typescript';
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const rel = (p: string): string => relative(root, p).split(sep).join('/');

/**
 * The runtimes' modules, their registry and their config sections are the composition root's part
 * in each runtime's folder: a module builds its runtime (and, for the fleet, the parts it owns) from
 * the config and what the platform hands every runtime, and declares its section of the config
 * beside it (docs/runtimes.md, "Runtimes as modules").
 */
const RUNTIME_ASSEMBLY =
  /^src\/(runtime\/(registry|runtime-module|runtime-config)\.ts|runtime\/[\w-]+\/(module|config)\.ts|fleet\/(module|config)\.ts)$/;

/** The floors, highest first; a folder not listed is its own program (agent, worker) or the console. */
const FLOORS: Array<{ name: string; rank: number; match: (file: string) => boolean }> = [
  // the command line starts the server (serve) or opens its stores (one-shot commands): above the root
  { name: 'command line', rank: 5, match: (f) => f.startsWith('src/cli/') },
  {
    name: 'composition root',
    rank: 4,
    match: (f) =>
      /^src\/(main|services|stores|events|config(-[\w-]+)?)\.ts$/.test(f) ||
      f.startsWith('src/compose/') ||
      RUNTIME_ASSEMBLY.test(f),
  },
  // src/transport/ is what the transports share: `TransportServices` (what they receive), NUL checks
  { name: 'transports', rank: 3, match: (f) => /^src\/(http|graphql|ssh|proxy|transport)\//.test(f) },
  {
    name: 'services',
    rank: 2,
    match: (f) =>
      /^src\/(pods|clusters|serverless|jobs|templates|volumes|billing|registries|accounts|catalog|quotas|inventory|logs|fleet|metrics|instances)\//.test(
        f,
      ),
  },
  { name: 'adapters', rank: 1, match: (f) => /^src\/(store|runtime)\//.test(f) },
  { name: 'domain', rank: 0, match: (f) => f.startsWith('src/domain/') },
];

/** A file's floor, or null for a file outside the server's floors (the agent, the worker library, the console). */
export function floorOf(file: string): { name: string; rank: number } | null {
  const floor = FLOORS.find((f) => f.match(file));
  return floor ? { name: floor.name, rank: floor.rank } : null;
}

const isSource = (f: string): boolean =>
  /\.(ts|tsx)$/.test(f) && !/\.test\.tsx?$/.test(f) && !f.endsWith('.d.ts') && !f.includes('/generated/');

function walk(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (isSource(rel(p))) out.push(rel(p));
  }
  return out;
}

/** The source files the figures cover: the server's and its programs' (src/) and the console's. */
export function sourceFiles(): string[] {
  return [...walk(join(root, 'src')), ...walk(join(root, 'console/src'))].sort();
}

export interface ImportEdge {
  file: string;
  target: string;
  typeOnly: boolean;
}

function resolveSpecifier(file: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  const base = resolve(root, dirname(file), spec);
  const candidates = [
    base,
    base.replace(/\.js$/, '.ts'),
    base.replace(/\.js$/, '.tsx'),
    `${base}.ts`,
    `${base}.tsx`,
    join(base, 'index.ts'),
  ];
  const hit = candidates.find((c) => existsSync(c) && statSync(c).isFile());
  return hit ? rel(hit) : null;
}

/** Every relative import of every source file, read from its syntax tree. */
export function importEdges(files = sourceFiles()): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const file of files) {
    const text = readFileSync(join(root, file), 'utf8');
    const sf = ts.createSourceFile(
      file,
      text,
      ts.ScriptTarget.Latest,
      false,
      file.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS,
    );
    const add = (spec: string, typeOnly: boolean): void => {
      const target = resolveSpecifier(file, spec);
      if (target) edges.push({ file, target, typeOnly });
    };
    const visit = (node: ts.Node): void => {
      if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
        const clause = node.importClause;
        const typeOnly =
          !!clause &&
          (clause.isTypeOnly ||
            (!clause.name &&
              !!clause.namedBindings &&
              ts.isNamedImports(clause.namedBindings) &&
              clause.namedBindings.elements.length > 0 &&
              clause.namedBindings.elements.every((e) => e.isTypeOnly)));
        add(node.moduleSpecifier.text, typeOnly);
      } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
        add(node.moduleSpecifier.text, node.isTypeOnly);
      } else if (
        ts.isCallExpression(node) &&
        node.expression.kind === ts.SyntaxKind.ImportKeyword &&
        node.arguments[0] &&
        ts.isStringLiteral(node.arguments[0])
      ) {
        add(node.arguments[0].text, false);
      } else if (
        ts.isImportTypeNode(node) &&
        ts.isLiteralTypeNode(node.argument) &&
        ts.isStringLiteral(node.argument.literal)
      ) {
        add(node.argument.literal.text, true);
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return edges;
}

/** The import loops: groups of two or more files that reach each other (Tarjan's algorithm). */
export function importLoops(edges: ImportEdge[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const e of edges) {
    if (e.file === e.target) continue;
    let s = next.get(e.file);
    if (!s) next.set(e.file, (s = new Set()));
    s.add(e.target);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const groups: string[][] = [];
  let counter = 0;
  const strong = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) groups.push(group.sort());
    }
  };
  for (const v of [...new Set(edges.map((e) => e.file))].sort()) if (!index.has(v)) strong(v);
  return groups.sort((a, b) => b.length - a.length || a[0]!.localeCompare(b[0]!));
}

/** The folder a file belongs to for folder loops: `src/http`, `src/(root)` for the composition root's files, `console/src`. */
const folderOf = (file: string): string => {
  const parts = file.split('/');
  if (parts[0] === 'console') return 'console/src';
  // the composition root's own folder and the runtimes' modules are parts of the root
  if (file.startsWith('src/compose/') || RUNTIME_ASSEMBLY.test(file)) return 'src/(root)';
  return parts.length > 2 ? `${parts[0]}/${parts[1]}` : 'src/(root)';
};

/** The import loops between folders: folders whose files import each other's, directly or around a ring. */
export function folderLoops(edges: ImportEdge[]): string[][] {
  return importLoops(
    edges
      .map((e) => ({ file: folderOf(e.file), target: folderOf(e.target), typeOnly: e.typeOnly }))
      .filter((e) => e.file !== e.target),
  );
}

/** Imports from a file of one floor into a file of a floor above it. */
export function upwardImports(edges: ImportEdge[]): ImportEdge[] {
  return edges.filter((e) => {
    const from = floorOf(e.file);
    const to = floorOf(e.target);
    return from !== null && to !== null && to.rank > from.rank;
  });
}

/** Source files over `limit` lines, longest first. */
export function longFiles(files = sourceFiles(), limit = 400): Array<{ file: string; lines: number }> {
  return files
    .map((file) => ({ file, lines: readFileSync(join(root, file), 'utf8').split('\n').length - 1 }))
    .filter((f) => f.lines > limit)
    .sort((a, b) => b.lines - a.lines);
}

export interface Trace {
  start: string;
  files: string[];
  calls: number;
  climbs: Array<{ from: string; to: string; fromFloor: string; toFloor: string }>;
  /** Calls into a folder already on the way from the start (back to a caller's folder, from another one). */
  returns: Array<{ from: string; to: string }>;
}

/**
 * The calls made from one method, followed through Gantry's own non-test source to `depth` calls
 * deep. `start` is `path#Class.method` (or `path#function`). A callee is found by the type checker
 * (through `Pick<>`s and imports); a call into an interface's or a type's member counts the file
 * that declares it and stops there, as a reader's trip would.
 */
let cachedProgram: ts.Program | undefined;

export function traceCalls(start: string, depth: number): Trace {
  const [file, name] = start.split('#') as [string, string];
  const files = sourceFiles().filter((f) => f.startsWith('src/'));
  const program = (cachedProgram ??= ts.createProgram(
    files.map((f) => join(root, f)),
    {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      strict: true,
      skipLibCheck: true,
      noEmit: true,
      types: ['node'],
    },
  ));
  const checker = program.getTypeChecker();
  const sf = program.getSourceFile(join(root, file));
  if (!sf) throw new Error(`${file} is not a source file`);
  const [owner, member] = name.includes('.') ? (name.split('.') as [string, string]) : [null, name];
  let startNode: ts.FunctionLikeDeclaration | null = null;
  const find = (node: ts.Node, inOwner: boolean): void => {
    if (startNode) return;
    if (ts.isClassDeclaration(node) && node.name?.text === owner) {
      ts.forEachChild(node, (c) => find(c, true));
      return;
    }
    if (
      (inOwner || owner === null) &&
      (ts.isMethodDeclaration(node) || ts.isFunctionDeclaration(node)) &&
      node.name &&
      ts.isIdentifier(node.name) &&
      node.name.text === member
    ) {
      startNode = node;
      return;
    }
    ts.forEachChild(node, (c) => find(c, inOwner));
  };
  find(sf, false);
  if (!startNode) throw new Error(`${name} is not declared in ${file}`);

  const fileOf = (n: ts.Node): string => rel(n.getSourceFile().fileName);
  /** What a call or `new` reaches: the declaration of its callee, or null outside Gantry's source. */
  const calleeOf = (expr: ts.Expression): ts.Declaration | null => {
    const at = ts.isPropertyAccessExpression(expr) ? expr.name : expr;
    let symbol = checker.getSymbolAtLocation(at);
    if (!symbol) return null;
    if (symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
    const declaration = symbol.valueDeclaration ?? symbol.declarations?.[0];
    if (!declaration) return null;
    const target = fileOf(declaration);
    return target.startsWith('src/') && isSource(target) ? declaration : null;
  };
  const bodyOf = (d: ts.Declaration): ts.Node | null => {
    if ((ts.isMethodDeclaration(d) || ts.isFunctionDeclaration(d) || ts.isConstructorDeclaration(d)) && d.body)
      return d.body;
    if (ts.isClassDeclaration(d)) return d.members.find(ts.isConstructorDeclaration)?.body ?? null;
    if (
      ts.isVariableDeclaration(d) &&
      d.initializer &&
      (ts.isArrowFunction(d.initializer) || ts.isFunctionExpression(d.initializer))
    )
      return d.initializer.body;
    if (ts.isPropertyDeclaration(d) && d.initializer && ts.isArrowFunction(d.initializer)) return d.initializer.body;
    return null;
  };

  const seen = new Set<ts.Node>();
  const crossed = new Set<string>([file]);
  const climbs: Trace['climbs'] = [];
  let calls = 0;
  const returns: Trace['returns'] = [];
  const follow = (body: ts.Node, from: string, left: number, path: string[] = [from]): void => {
    if (seen.has(body) || left === 0) return;
    seen.add(body);
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
        const declaration = calleeOf(node.expression);
        if (declaration) {
          const to = fileOf(declaration);
          calls++;
          crossed.add(to);
          const fromFloor = floorOf(from);
          const toFloor = floorOf(to);
          if (fromFloor && toFloor && toFloor.rank > fromFloor.rank)
            climbs.push({ from, to, fromFloor: fromFloor.name, toFloor: toFloor.name });
          const folder = (f: string): string => f.split('/').slice(0, 2).join('/');
          if (folder(to) !== folder(from) && path.some((p) => folder(p) === folder(to))) returns.push({ from, to });
          const next = bodyOf(declaration);
          if (next) follow(next, to, left - 1, to === from ? path : [...path, to]);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(body);
  };
  follow((startNode as ts.FunctionLikeDeclaration).body!, file, depth);
  return { start, files: [...crossed].sort(), calls, climbs, returns };
}

const WORKER_LAUNCH = 'src/serverless/launched-workers.ts#LaunchedWorkers.launch';

function main(): void {
  const args = process.argv.slice(2);
  const json = args.includes('--json');
  const traceAt = args.indexOf('--trace');
  const depthAt = args.indexOf('--depth');
  const start = traceAt >= 0 ? args[traceAt + 1]! : WORKER_LAUNCH;
  const depth = depthAt >= 0 ? Number(args[depthAt + 1]) : 2;
  const files = sourceFiles();
  const edges = importEdges(files);
  const loops = importLoops(edges);
  const valueLoops = importLoops(edges.filter((e) => !e.typeOnly));
  const betweenFolders = folderLoops(edges);
  const upward = upwardImports(edges);
  const long = longFiles(files);
  let trace: Trace | null = null;
  let direct: Trace | null = null;
  if (existsSync(join(root, start.split('#')[0]!))) {
    trace = traceCalls(start, depth);
    direct = traceCalls(start, 1);
  }
  if (json) {
    console.log(
      JSON.stringify(
        {
          files: files.length,
          imports: edges.length,
          loops,
          folderLoops: betweenFolders,
          valueLoops,
          upward,
          long,
          direct,
          trace,
        },
        null,
        2,
      ),
    );
    return;
  }
  console.log(`source files: ${files.length}, relative imports: ${edges.length}`);
  console.log(`import loops: ${loops.length} (${valueLoops.length} without type-only imports)`);
  for (const g of loops) console.log(`  ${g.length} files: ${g.join(' ')}`);
  console.log(`folder loops: ${betweenFolders.length}`);
  for (const g of betweenFolders) console.log(`  ${g.join(' ')}`);
  console.log(`imports pointing up the floors: ${upward.length}`);
  for (const e of upward) console.log(`  ${e.file} -> ${e.target}${e.typeOnly ? ' (type)' : ''}`);
  console.log(`files over 400 lines: ${long.length}`);
  for (const f of long) console.log(`  ${f.lines} ${f.file}`);
  if (direct)
    console.log(`${direct.start}: its own calls reach ${direct.files.length} files (${direct.files.join(' ')})`);
  if (trace) {
    console.log(
      `${trace.start} (calls followed ${depth} deep): ${trace.files.length} files crossed, ${trace.calls} calls, ${trace.climbs.length} climbs up a floor, ${trace.returns.length} calls back into a caller's folder`,
    );
    for (const f of trace.files) console.log(`  ${f}`);
    for (const c of trace.climbs) console.log(`  climb: ${c.from} (${c.fromFloor}) -> ${c.to} (${c.toFloor})`);
    for (const c of trace.returns) console.log(`  back: ${c.from} -> ${c.to}`);
  } else console.log(`${start}: not in the tree`);
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) main();
