import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { instanceSpec, waitFor } from '../runtime-contract.js';
import type { OutputLine, OutputQuery } from '../runtime.js';
import { images, makeRuntime, node, removeDataDirs } from '../../../test/support/process-runtime-harness.js';
import { stampedPathOf } from './output-stamper.js';

after(removeDataDirs);

const testImages = {
  ...images,
  // three lines, then one each time the file `more` appears in its folder, then idles
  'test/lines': {
    command: [
      node,
      '-e',
      'console.log("one"); console.error("two"); process.stdout.write("three\\r\\n"); const fs = require("fs"); let n = 0; setInterval(() => { if (fs.existsSync("more")) { fs.unlinkSync("more"); console.log("more " + ++n); } }, 20)',
    ],
  },
  'test/partial': {
    command: [node, '-e', 'process.stdout.write("no newline at the end"); setTimeout(() => process.exit(0), 100)'],
  },
};

const collect = async (it: AsyncIterable<OutputLine>): Promise<OutputLine[]> => {
  const out: OutputLine[] = [];
  for await (const l of it) out.push(l);
  return out;
};
const query = (q: Partial<OutputQuery> = {}): OutputQuery => ({
  follow: false,
  signal: new AbortController().signal,
  ...q,
});

describe('process runtime output()', () => {
  test('the output of an instance is answered line by line, stdout and stderr, with the time it was read', async () => {
    const { runtime, clock } = makeRuntime({ images: testImages });
    try {
      clock.set(1_700_000_000_000);
      const status = await runtime.start(instanceSpec({ id: 'lines1', image: 'test/lines' }));
      assert.equal(status.state, 'running');
      const lines = await waitFor('three lines', async () => {
        const got = await collect(runtime.output('lines1', query()));
        return got.length >= 3 ? got : null;
      });
      assert.deepEqual(
        lines.map((l) => l.line),
        ['one', 'two', 'three'],
      );
      assert.ok(lines.every((l) => l.ts === 1_700_000_000_000));
      assert.deepEqual(
        (await collect(runtime.output('lines1', query({ tail: 1 })))).map((l) => l.line),
        ['three'],
      );
      assert.deepEqual(await collect(runtime.output('lines1', query({ sinceMs: 1_700_000_000_001 }))), []);
    } finally {
      await runtime.close();
    }
  });

  test('a follower gets new lines as they are written and ends when the instance stops; the output stays readable', async () => {
    const { runtime, dataDir, clock } = makeRuntime({ images: testImages });
    try {
      clock.set(1_700_000_000_000);
      await runtime.start(instanceSpec({ id: 'lines2', image: 'test/lines' }));
      const abort = new AbortController();
      const got: string[] = [];
      const following = (async () => {
        for await (const l of runtime.output('lines2', { follow: true, signal: abort.signal })) got.push(l.line);
      })();
      await waitFor('the first lines', () => got.length >= 3);
      clock.set(1_700_000_005_000);
      const { writeFileSync } = await import('node:fs');
      const cwd = `${dataDir}/instances/lines2`;
      writeFileSync(`${cwd}/more`, '');
      await waitFor('a new line', () => got.includes('more 1'));
      await runtime.stop('lines2');
      await following;
      assert.deepEqual(got, ['one', 'two', 'three', 'more 1']);
      const kept = await collect(runtime.output('lines2', query()));
      assert.deepEqual(
        kept.map((l) => l.line),
        ['one', 'two', 'three', 'more 1'],
      );
      assert.equal(kept[3]!.ts, 1_700_000_005_000);
      assert.match(readFileSync(stampedPathOf(dataDir, 'lines2'), 'utf8'), /^1700000000000 one\n/);
    } finally {
      await runtime.close();
    }
  });

  test('a last line without a newline is kept when the process ends, and an unknown id answers nothing', async () => {
    const { runtime } = makeRuntime({ images: testImages });
    try {
      await runtime.start(instanceSpec({ id: 'partial1', image: 'test/partial' }));
      const lines = await collect(runtime.output('partial1', { follow: true, signal: new AbortController().signal }));
      assert.deepEqual(
        lines.map((l) => l.line),
        ['no newline at the end'],
      );
      assert.deepEqual(
        await collect(runtime.output('nobody', { follow: true, signal: new AbortController().signal })),
        [],
      );
    } finally {
      await runtime.close();
    }
  });

  test('the stamped output is rotated past its cap, so what is kept stays bounded', async () => {
    const { runtime, dataDir } = makeRuntime({ images: testImages, maxLogBytes: 4096 });
    try {
      await runtime.start(instanceSpec({ id: 'chatty1', image: 'test/chatty' }));
      const { statSync, existsSync } = await import('node:fs');
      const path = stampedPathOf(dataDir, 'chatty1');
      await waitFor('a rotation', () => existsSync(`${path}.1`));
      await runtime.stop('chatty1');
      assert.ok(
        (existsSync(path) ? statSync(path).size : 0) <= 4096 + 80 * 1024,
        'the current file is cut soon after the cap',
      );
      const kept = await collect(runtime.output('chatty1', query()));
      assert.ok(kept.length > 0 && kept.every((l) => l.line === 'x'.repeat(1023)));
      // a tail reads back from the end, across the rotated file
      const tail = await collect(runtime.output('chatty1', query({ tail: kept.length - 1 })));
      assert.deepEqual(tail, kept.slice(1));
      assert.equal((await collect(runtime.output('chatty1', query({ tail: 3 })))).length, 3);
    } finally {
      await runtime.close();
    }
  });
});
