// Bundles the compiled command line (dist/cli/main.js) and what it loads into dist/bundle/main.js
// (what every command loads) and chunks beside it (what one command or runtime loads, when it
// does), which bin/gantry.js runs. Node 20 has no compile cache and resolves each of
// the ~440 compiled files and the packages' own files one by one: in one file the server's code
// loads in about a third of the time (docs/status.md, "Start to ready"). Run by `npm run build`
// after tsc. Every file is written in one folder: code that finds a file beside its module
// (package.json two folders up, the watchdog's script) finds it from there as from dist/cli.
//
// Left outside the bundle: native addons, and the packages that find files of their own beside
// their code at run time (pino's and thread-stream's worker scripts, swagger-ui's static files,
// @fastify/swagger's package.json).
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { copyFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const out = join(root, 'dist', 'bundle');
const EXTERNAL = [
  'better-sqlite3',
  'node-pty',
  'ssh2',
  'cpu-features',
  'pg-native',
  'pino',
  'thread-stream',
  '@fastify/swagger',
  '@fastify/swagger-ui',
];

rmSync(out, { recursive: true, force: true });
await build({
  entryPoints: { main: join(root, 'dist', 'cli', 'main.js') },
  outdir: out,
  chunkNames: '[name]-[hash]',
  splitting: true,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: EXTERNAL,
  sourcemap: 'linked',
  logLevel: 'warning',
  // the packages written as CommonJS call require() for Node's own modules
  banner: {
    js: "import { createRequire as __gantryRequire } from 'node:module'; const require = __gantryRequire(import.meta.url);",
  },
});
// the process runtime's watchdog runs as its own process from the file beside its module
copyFileSync(join(root, 'dist', 'runtime', 'process', 'watchdog-process.mjs'), join(out, 'watchdog-process.mjs'));

// the commit `gantry --version` names: known when the build runs in a git checkout (a packed or
// installed package keeps the one it was built from; GANTRY_BUILD_COMMIT names it for a build
// outside a checkout)
let commit = process.env.GANTRY_BUILD_COMMIT || null;
if (!commit)
  try {
    commit = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    // not a checkout, or no git: the version alone
  }
const buildInfo = join(root, 'dist', 'build-info.json');
if (commit) writeFileSync(buildInfo, JSON.stringify({ commit }) + '\n');
else rmSync(buildInfo, { force: true });
