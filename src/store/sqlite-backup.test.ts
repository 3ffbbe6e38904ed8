import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { backupSqlite, BackupRefused, readBackupInfo, restoreSqlite } from './sqlite-backup.js';

function scratch(): { dir: string; source: string; done: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-sqlite-backup-'));
  const source = join(dir, 'gantry.db');
  const db = new SqliteDatabase(source);
  db.pragma('journal_mode = WAL');
  db.exec("CREATE TABLE things (name TEXT); INSERT INTO things VALUES ('kept')");
  db.close();
  return { dir, source, done: () => rmSync(dir, { recursive: true, force: true }) };
}

const info = { secretKey: 'ab'.repeat(32), madeBy: 'gantry 0.0.0-test' };

test('a backup is one 0600 file holding the database and the key, and a restore drops the key table from the copy it writes', async () => {
  const { dir, source, done } = scratch();
  try {
    const file = join(dir, 'backup.db');
    await backupSqlite({ source, target: file, force: false, info });
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(readdirSync(dir).sort(), ['backup.db', 'gantry.db'], 'no partial or journal file is left');
    const read = readBackupInfo(file);
    assert.deepEqual([read.secretKey, read.madeBy], [info.secretKey, info.madeBy]);
    const target = join(dir, 'restored.db');
    assert.equal(restoreSqlite({ file, target, force: false }).secretKey, info.secretKey);
    const db = new SqliteDatabase(target, { readonly: true });
    assert.deepEqual(db.prepare('SELECT name FROM things').all(), [{ name: 'kept' }]);
    assert.deepEqual(db.prepare("SELECT name FROM sqlite_master WHERE name = 'gantry_backup'").all(), []);
    db.close();
  } finally {
    done();
  }
});

test('an existing file is neither overwritten by a backup nor restored over without force', async () => {
  const { dir, source, done } = scratch();
  try {
    const file = join(dir, 'backup.db');
    writeFileSync(file, 'precious');
    await assert.rejects(backupSqlite({ source, target: file, force: false, info }), BackupRefused);
    assert.equal(readFileSync(file, 'utf8'), 'precious');
    assert.deepEqual(readdirSync(dir).sort(), ['backup.db', 'gantry.db'], 'the partial copy is removed');
    await backupSqlite({ source, target: file, force: true, info });
    assert.equal(readBackupInfo(file).secretKey, info.secretKey);
    assert.throws(() => restoreSqlite({ file, target: source, force: false }), BackupRefused);
  } finally {
    done();
  }
});

test('a SQLite file that no backup wrote is refused as a backup', () => {
  const { source, done } = scratch();
  try {
    assert.throws(() => readBackupInfo(source), /not a Gantry backup/);
  } finally {
    done();
  }
});
