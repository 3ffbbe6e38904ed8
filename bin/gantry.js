#!/usr/bin/env node
// Runs the compiled CLI (dist/, in one file when the bundle is at least as new) when it is at least as
// new as every source file; otherwise, in a checkout being edited, runs the TypeScript sources
// through tsx so it is never stale.
import { existsSync, readdirSync, statSync } from 'node:fs';
import module from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const compiled = join(root, 'dist', 'cli', 'main.js');
// the compiled command line in one file (scripts/bundle.mjs): it loads in about a third of the time
const bundled = join(root, 'dist', 'bundle', 'main.js');
const sources = join(root, 'src');

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

const useCompiled =
  existsSync(compiled) &&
  (!existsSync(sources) || (!process.env.GANTRY_FROM_SOURCE && statSync(compiled).mtimeMs >= newestSource(sources)));
if (useCompiled) {
  // Node 22.1 and later keep compiled code between runs (a faster start); Node 20 has no such cache.
  module.enableCompileCache?.();
  const fresh = (file) => existsSync(file) && statSync(file).mtimeMs >= statSync(compiled).mtimeMs;
  await import(pathToFileURL(!process.env.GANTRY_UNBUNDLED && fresh(bundled) ? bundled : compiled).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(join(sources, 'cli', 'main.ts')).href);
}
