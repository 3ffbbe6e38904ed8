// Builds the agent's single executable (docs/deploy.md, "Fleet: the one-line join"):
// dist/agent/gantry-agent-linux-<arch> and its checksum beside it (<name>.sha256, as sha256sum
// writes it). The agent's code (src/cli/agent-executable.ts: `gantry agent` and what it loads, nothing
// else) is bundled from the sources into one CommonJS file, which Node's single executable
// application support turns into a blob that postject injects into a copy of the running `node`.
// The host then needs nothing but the file and a Docker Engine.
//
// No native addon may be reached from the agent's code (a single executable cannot load one from
// its bundle): the build fails naming any that is. Run with `npm run build:agent`; about 10 s.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postject from 'postject';

const root = join(import.meta.dirname, '..');
const out = join(root, 'dist', 'agent');
const name = `gantry-agent-linux-${process.arch}`;
const target = join(out, name);
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const NATIVE = /node_modules\/(better-sqlite3|node-pty|ssh2|cpu-features|pg-native|bindings|node-gyp-build)\/|\.node$/;

if (process.platform !== 'linux') throw new Error('the agent executable is built on Linux, for Linux hosts');
const work = mkdtempSync(join(tmpdir(), 'gantry-sea-'));
try {
  const bundle = join(work, 'agent.cjs');
  const result = await build({
    entryPoints: [join(root, 'src', 'cli', 'agent-executable.ts')],
    outfile: bundle,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: `node${process.versions.node.split('.')[0]}`,
    metafile: true,
    logLevel: 'warning',
    // the executable has no package.json beside it: its version is written in
    define: { GANTRY_AGENT_VERSION: JSON.stringify(version), 'import.meta.url': '__gantryModuleUrl' },
    banner: { js: "const __gantryModuleUrl = require('node:url').pathToFileURL(__filename).href;" },
  });
  const native = Object.keys(result.metafile.inputs).filter((input) => NATIVE.test(input));
  if (native.length > 0)
    throw new Error(
      `the agent's code reaches native addons, which a single executable cannot load:\n  ${native.join('\n  ')}`,
    );

  const blob = join(work, 'agent.blob');
  const seaConfig = join(work, 'sea-config.json');
  writeFileSync(
    seaConfig,
    JSON.stringify({ main: bundle, output: blob, disableExperimentalSEAWarning: true, useCodeCache: true }),
  );
  execFileSync(process.execPath, ['--experimental-sea-config', seaConfig], { stdio: 'pipe' });

  mkdirSync(out, { recursive: true });
  const partial = `${target}.partial`;
  copyFileSync(process.execPath, partial);
  chmodSync(partial, 0o755);
  // postject warns about ELF notes it does not parse; the injection itself is checked below
  const warn = console.warn;
  console.warn = () => {};
  try {
    await postject.inject(partial, 'NODE_SEA_BLOB', readFileSync(blob), {
      sentinelFuse: 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2',
    });
  } finally {
    console.warn = warn;
  }
  const said = execFileSync(partial, ['--version'], { encoding: 'utf8' }).trim();
  if (said !== `gantry-agent ${version}`)
    throw new Error(`the built executable says "${said}", not gantry-agent ${version}`);
  const sha256 = createHash('sha256').update(readFileSync(partial)).digest('hex');
  copyFileSync(partial, target);
  rmSync(partial);
  writeFileSync(`${target}.sha256`, `${sha256}  ${name}\n`);
  const mb = (statSync(target).size / 1048576).toFixed(1);
  console.log(`${target}: ${mb} MiB (Node ${process.version}, ${native.length} native addons), sha256 ${sha256}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
