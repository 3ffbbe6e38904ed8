import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HOST_KEY_FILE, loadHostKey } from './host-key.js';

test('the host key is ed25519, generated on the first start with mode 0600, and the same on every later start', () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'gantry-hostkey-')), 'data');
  try {
    const first = loadHostKey(dir);
    assert.equal(first.created, true);
    assert.match(first.privateKey, /BEGIN OPENSSH PRIVATE KEY/);
    assert.match(first.fingerprint, /^SHA256:[A-Za-z0-9+/]{43}$/);
    assert.equal(statSync(join(dir, HOST_KEY_FILE)).mode & 0o777, 0o600);
    const again = loadHostKey(dir);
    assert.equal(again.created, false);
    assert.equal(again.fingerprint, first.fingerprint);
  } finally {
    rmSync(join(dir, '..'), { recursive: true, force: true });
  }
});
