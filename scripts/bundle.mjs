// Bundles the compiled command line (dist/cli/main.js) and what it loads into one file,
// dist/cli/gantry.mjs, which bin/gantry.js runs. Node 20 has no compile cache and resolves each of
// the ~440 compiled files and the packages' own files one by one: in one file the server's code
// loads in about a third of the time (docs/status.md, "Start to ready"). Run by `npm run build`
// after tsc.
//
// Left outside the bundle: native addons, and the packages that find files of their own beside
// their code at run time (pino's and thread-stream's worker scripts, swagger-ui's static files,
// @fastify/swagger's package.json).
import { build } from 'esbuild';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
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

await build({
  entryPoints: [join(root, 'dist', 'cli', 'main.js')],
  outfile: join(root, 'dist', 'cli', 'gantry.mjs'),
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
copyFileSync(
  join(root, 'dist', 'runtime', 'process', 'watchdog-process.mjs'),
  join(root, 'dist', 'cli', 'watchdog-process.mjs'),
);
