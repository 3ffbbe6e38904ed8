import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { decodeLogFrames, ndjson, tailLines } from './engine-streams.js';
import { exitReason } from './exit-reason.js';

const frame = (stream: number, text: string): Buffer => {
  const data = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(data.length, 4);
  return Buffer.concat([header, data]);
};

describe('engine streams', () => {
  test('ndjson yields each line as it completes, across chunk boundaries, skipping blank lines', async () => {
    const chunks = ['{"a":1}\n{"b"', ':2}\n\n', '{"c":3}'];
    const seen: unknown[] = [];
    for await (const value of ndjson(Readable.from(chunks))) seen.push(value);
    assert.deepEqual(seen, [{ a: 1 }, { b: 2 }, { c: 3 }]);
  });

  test('log frames are split by their 8-byte headers, stdout and stderr kept in order', () => {
    const body = Buffer.concat([frame(1, 'out 1\n'), frame(2, 'err 1\n'), frame(1, 'out 2\n')]);
    assert.deepEqual(
      decodeLogFrames(body).map((f) => [f.stream, f.data.toString()]),
      [
        ['stdout', 'out 1\n'],
        ['stderr', 'err 1\n'],
        ['stdout', 'out 2\n'],
      ],
    );
  });

  test('a body cut inside a frame keeps what arrived, and a raw (TTY) body is taken as it is', () => {
    const whole = Buffer.concat([frame(1, 'first\n'), frame(2, 'second line\n')]);
    const cut = decodeLogFrames(whole.subarray(0, whole.length - 5));
    assert.deepEqual(
      cut.map((f) => f.data.toString()),
      ['first\n', 'second '],
    );
    assert.deepEqual(
      decodeLogFrames(Buffer.from('plain output\n')).map((f) => f.data.toString()),
      ['plain output\n'],
    );
  });

  test('tailLines keeps the last lines, drops trailing blanks, and marks a cut start', () => {
    assert.equal(tailLines('a\nb\nc\n\n', { lines: 2 }), 'b\nc');
    assert.equal(tailLines('  \n'), '');
    assert.equal(tailLines('x'.repeat(30), { maxChars: 10 }), `…${'x'.repeat(9)}`);
  });
});

describe('exitReason', () => {
  const state = { ExitCode: 3, OOMKilled: false, Error: '' };
  test('says the exit code and appends the last output', () => {
    assert.equal(exitReason(state, 'boom'), 'process exited with code 3; last output:\nboom');
    assert.equal(exitReason({ ...state, ExitCode: 0 }, ''), 'process exited with code 0');
  });
  test('names the signal of a code above 128, and an out-of-memory kill with its limit', () => {
    assert.equal(exitReason({ ...state, ExitCode: 137 }, ''), 'process was killed by SIGKILL (exit code 137)');
    assert.equal(
      exitReason({ ...state, ExitCode: 137, OOMKilled: true }, 'alloc', { memoryBytes: 2 * 1024 ** 3 }),
      'process was killed for running out of memory (its limit of 2 GiB), exit code 137; last output:\nalloc',
    );
  });
  test('an instance still starting ended before its health check passed', () => {
    assert.match(exitReason(state, '', { starting: true }), /code 3 before its health check passed$/);
  });
});
