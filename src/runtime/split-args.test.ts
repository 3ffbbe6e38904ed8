import { test } from 'node:test';
import assert from 'node:assert/strict';
import { shellWords } from '../domain/start-command.js';
import { splitArgs } from './split-args.js';

test('args split on runs of whitespace, with nothing for a blank string', () => {
  assert.deepEqual(splitArgs('  --port 8000\t--verbose\n'), ['--port', '8000', '--verbose']);
  assert.deepEqual(splitArgs(''), []);
  assert.deepEqual(splitArgs('   '), []);
});

test('double and single quotes keep spaces inside one word and may join with plain text', () => {
  assert.deepEqual(splitArgs(`--prompt "a red fox" --name 'my model'`), [
    '--prompt',
    'a red fox',
    '--name',
    'my model',
  ]);
  assert.deepEqual(splitArgs(`--opt="x y"z`), ['--opt=x yz']);
  assert.deepEqual(splitArgs(`"" ''`), ['', '']);
});

test('single quotes are literal; double quotes honour \\" and \\\\ only', () => {
  assert.deepEqual(splitArgs(`'it\\"s' "say \\"hi\\" \\n"`), ['it\\"s', 'say "hi" \\n']);
  assert.deepEqual(splitArgs(`"it's"`), ["it's"]);
});

test('a backslash outside quotes escapes a blank or a quote, and is kept before anything else', () => {
  assert.deepEqual(splitArgs('two\\ words \\"quoted\\" C:\\dir'), ['two words', '"quoted"', 'C:\\dir']);
});

test('no shell expansion happens', () => {
  assert.deepEqual(splitArgs('$HOME ~ *.py'), ['$HOME', '~', '*.py']);
});

test('an unterminated quote is refused with a message naming it', () => {
  assert.throws(() => splitArgs(`--prompt "never closed`), /unterminated " quote/);
  assert.throws(() => splitArgs(`'open`), /unterminated ' quote/);
});

test('words written as shell words (an override`s cmd, v1 dockerStartCmd) split back into exactly those words', () => {
  const words = ['plain', 'two words', "it's", '"quoted"', '', 'back\\slash', 'line\nbreak', '$HOME'];
  assert.deepEqual(splitArgs(shellWords(words)), words);
});
