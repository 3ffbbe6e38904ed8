// A mapped image's process that reports the environment it was started with, for the env-policy
// tests: it writes `<instance dir>/env.json` whole (write, then rename: a reader never sees half
// of it), then idles.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The `-e` script for `node`: map an image to `[process.execPath, '-e', DUMP_ENV]`. */
export const DUMP_ENV = `const fs = require('fs'), p = require('path').join(process.env.GANTRY_INSTANCE_DIR, 'env.json'); fs.writeFileSync(p + '.tmp', JSON.stringify(process.env)); fs.renameSync(p + '.tmp', p); setInterval(() => {}, 1 << 30);`;

/** Where the instance `id` of a server on `dataDir` writes its env dump. */
export const envFileOf = (dataDir: string, id: string): string => join(dataDir, 'instances', id, 'env.json');

/** Polls `probe` until it answers non-null (an instance process is real: it starts when it starts). */
async function eventually<T>(what: string, probe: () => Promise<T | null> | T | null, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null) return value;
    if (Date.now() > deadline) assert.fail(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The environment instance `id` reported, once it has. */
export const seenEnv = (dataDir: string, id: string): Promise<Record<string, string>> =>
  eventually(`the env dump of ${id}`, () =>
    existsSync(envFileOf(dataDir, id))
      ? (JSON.parse(readFileSync(envFileOf(dataDir, id), 'utf8')) as Record<string, string>)
      : null,
  );
