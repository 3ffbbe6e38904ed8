/** `gantry --version` and `gantry version`: the package's version (and the build's commit when known), exit 0. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runGantry } from './support/spawn-gantry.js';

const { version } = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as {
  version: string;
};

for (const args of [['--version'], ['version']])
  test(`gantry ${args.join(' ')} prints the package's version and exits 0`, () => {
    const r = runGantry(args);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^gantry ${version.replaceAll('.', '\\.')}( \\([0-9a-f]{7,40}\\))?\\n$`));
  });
