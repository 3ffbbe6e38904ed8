import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiError } from './errors.js';
import {
  assertEntrypointSupported,
  checkStartCommand,
  entrypointOf,
  MAX_START_COMMAND_CHARS,
  MAX_START_COMMAND_WORDS,
  overrideText,
  startCommandOf,
} from './start-command.js';

/** What dstack's `_get_docker_args` writes, made by its own code (test/fixtures/dstack-docker-args.py). */
const dstack = JSON.parse(
  readFileSync(join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'dstack-docker-args.json'), 'utf8'),
) as { authorizedKeys: string[]; graphqlLiteralBody: string };

/** A GraphQL string literal's body as the GraphQL parser reads it (the escapes dstack's double json.dumps makes). */
const literal = (body: string): string => JSON.parse(`"${body}"`) as string;

test('dstack`s dockerArgs, read out of its GraphQL string literal, is the override: /bin/sh -c and one command word', () => {
  const command = startCommandOf(literal(dstack.graphqlLiteralBody));
  assert.equal(command.form, 'override');
  if (command.form !== 'override') return;
  assert.deepEqual(command.entrypoint, ['/bin/sh', '-c']);
  assert.equal(command.cmd?.length, 1);
  const [word = ''] = command.cmd ?? [];
  assert.match(word, /^\( : && unset LD_LIBRARY_PATH/);
  for (const key of dstack.authorizedKeys) assert.ok(word.includes(`--ssh-authorized-key '${key}'`));
});

test('an object of only cmd and/or entrypoint, each an array of strings, is the override; empty arrays keep the image`s own', () => {
  assert.deepEqual(startCommandOf('{"cmd": ["a", "b c"]}'), { form: 'override', entrypoint: null, cmd: ['a', 'b c'] });
  assert.deepEqual(startCommandOf(' {"entrypoint":["bash","-c"]} '), {
    form: 'override',
    entrypoint: ['bash', '-c'],
    cmd: null,
  });
  assert.deepEqual(startCommandOf('{"cmd": [], "entrypoint": []}'), { form: 'override', entrypoint: null, cmd: null });
  assert.equal(entrypointOf('{"entrypoint": ["x"], "cmd": ["y"]}')?.[0], 'x');
});

test('anything else is shell words, as given: other keys, non-string items, no key, arrays, plain text, broken JSON', () => {
  for (const args of [
    '{"cmd": ["a"], "env": []}',
    '{"cmd": "echo hi"}',
    '{"cmd": [1]}',
    '{"entrypoint": null}',
    '{}',
    '["bash", "-c"]',
    'python -m http.server 8000',
    '{"cmd": ["a"]',
    '',
  ])
    assert.deepEqual(startCommandOf(args), { form: 'words', text: args }, args);
  assert.equal(entrypointOf('bash -c "sleep 1"'), null);
});

test('the override written from word arrays reads back as the same words, in the key order and spacing dstack sends', () => {
  const entrypoint = ['bash', '-c'];
  const cmd = ['echo "it\'s", done', '', 'a","b', 'ünï'];
  const text = overrideText(entrypoint, cmd);
  assert.ok(text.startsWith('{"cmd": ["echo'), text);
  assert.deepEqual(startCommandOf(text), { form: 'override', entrypoint, cmd });
  assert.equal(overrideText([], ['x']), '{"cmd": ["x"]}');
});

const refusal = (fn: () => void): ApiError => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    return err;
  }
  assert.fail('no refusal');
};

test('a start command is refused past its bounds: length, words per array, a NUL, an entrypoint without a program', () => {
  assert.match(refusal(() => checkStartCommand('x'.repeat(MAX_START_COMMAND_CHARS + 1))).message, /at most 16384/);
  checkStartCommand('x'.repeat(MAX_START_COMMAND_CHARS));
  const many = JSON.stringify({ cmd: Array.from({ length: MAX_START_COMMAND_WORDS + 1 }, () => 'w') });
  assert.match(refusal(() => checkStartCommand(many)).message, /cmd has 257 words; at most 256/);
  assert.match(refusal(() => checkStartCommand('echo a\0b')).message, /NUL/);
  assert.match(refusal(() => checkStartCommand('{"entrypoint": ["", "x"]}')).message, /first word is the program/);
  checkStartCommand('{"entrypoint": ["/bin/sh", "-c"], "cmd": [""]}');
});

test('a runtime without entrypointOverride refuses an entrypoint by name, and takes words and a cmd-only override', () => {
  const processRuntime = { runtime: 'process', entrypointOverride: false };
  const err = refusal(() => assertEntrypointSupported(processRuntime, '{"entrypoint": ["bash", "-c"], "cmd": ["x"]}'));
  assert.equal(err.code, 'ENTRYPOINT_NOT_SUPPORTED');
  assert.equal(err.status, 400);
  assert.match(err.message, /runtime process cannot/);
  assertEntrypointSupported(processRuntime, '{"cmd": ["x"]}');
  assertEntrypointSupported(processRuntime, 'bash -c x');
  assertEntrypointSupported({ runtime: 'docker', entrypointOverride: true }, '{"entrypoint": ["bash"]}');
});
