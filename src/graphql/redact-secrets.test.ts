import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse, print, Kind } from 'graphql';
import { redactSecrets, secretFormsOf } from './redact-secrets.js';

const inline = (password: string) =>
  parse(`mutation { saveRegistryAuth(input: {name: "n", username: "u", password: ${password}}) { id } }`);

test('a one-letter password hides its quoted echo and leaves every other "a" of the message alone', () => {
  const forms = secretFormsOf(inline('["a"]'), null);
  const message =
    'Field "name" of type "SaveRegistryAuthInput" has a value: String cannot represent a non string value: ["a"]';
  assert.equal(
    redactSecrets(message, forms),
    'Field "name" of type "SaveRegistryAuthInput" has a value: String cannot represent a non string value: ["[redacted]"]',
  );
  const viaVariables = secretFormsOf(null, { input: { password: 'ab' } });
  assert.equal(
    redactSecrets('Variable "$input" got invalid value { password: "ab", lab: 1 } at "input"; a lab', viaVariables),
    'Variable "$input" got invalid value { password: "[redacted]", lab: 1 } at "input"; a lab',
  );
});

test('a secret is never echoed, whether JSON-quoted, GraphQL-quoted, escaped, a block string or long and bare', () => {
  const tricky = 'p"a\\ss\nword';
  const forms = secretFormsOf(inline(print({ kind: Kind.STRING, value: tricky })), { token: tricky });
  for (const echo of [JSON.stringify(tricky), print({ kind: Kind.STRING, value: tricky })]) {
    const out = redactSecrets(`value: ${echo}.`, forms);
    assert.equal(out, 'value: "[redacted]".');
  }
  const block = secretFormsOf(inline('"""hunter2-block"""'), null);
  assert.equal(
    redactSecrets('found """hunter2-block""" and hunter2-block', block),
    'found "[redacted]" and [redacted]',
  );
  const long = secretFormsOf(null, { input: { accessSecret: 'hunter2-s3cret' } });
  assert.equal(
    redactSecrets('could not log in with hunter2-s3cret: denied', long),
    'could not log in with [redacted]: denied',
  );
  assert.equal(
    redactSecrets('could not log in with xhunter2-s3cret', long),
    'could not log in with xhunter2-s3cret',
    'inside a longer word it is not this secret',
  );
});

test('numbers and enum literals given as secrets are hidden where they stand alone, not inside other numbers', () => {
  const forms = secretFormsOf(inline('hunter'), { input: { password: 1234 } });
  assert.equal(
    redactSecrets('String cannot represent a non string value: hunter', forms),
    'String cannot represent a non string value: [redacted]',
  );
  assert.equal(
    redactSecrets('got invalid value 1234 at "input.password"; 12345 and 1.1234 stay', forms),
    'got invalid value [redacted] at "input.password"; 12345 and 1.1234 stay',
  );
  assert.equal(redactSecrets('hunters hunt', forms), 'hunters hunt');
});

test('a variable passed to a secret field is secret whatever its name', () => {
  const document = parse(
    'mutation M($p: String, $n: String) { saveRegistryAuth(input: {name: $n, username: "u", password: $p}) { id } }',
  );
  const forms = secretFormsOf(document, { p: 'xy', n: 'ghcr' });
  assert.equal(redactSecrets('values "xy" and "ghcr"', forms), 'values "[redacted]" and "ghcr"');
});

test('a request without secrets leaves messages untouched', () => {
  const forms = secretFormsOf(parse('{ myself { id } }'), { input: { name: 'a', password: '' } });
  assert.equal(forms.size, 0);
  assert.equal(redactSecrets('a "a" a', forms), 'a "a" a');
});
