import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import type { Template } from '../domain/template.js';
import { AccountStore } from './account-store.js';
import { TemplateStore } from './template-store.js';

const template = (over: Partial<Template> = {}): Template => ({
  id: 't1',
  accountId: 'a1',
  name: 'mine',
  imageName: 'ubuntu:22.04',
  args: 'sleep infinity',
  containerDiskInGb: 20,
  volumeInGb: 10,
  volumeMountPath: '/workspace',
  ports: ['8888/http', '22/tcp'],
  env: { A: '1', B: 'two' },
  containerRegistryAuthId: null,
  startSsh: true,
  startJupyter: false,
  allowedCudaVersions: ['12.4'],
  isServerless: false,
  isPublic: false,
  category: 'NVIDIA',
  readme: '# hi',
  createdAt: 1_700_000_000_000,
  updatedAt: 1_700_000_000_000,
  ...over,
});

for (const { name, skip } of dialects()) {
  describe(`TemplateStore on ${name}`, { skip }, () => {
    let t: TestDb;
    let store: TemplateStore;
    before(async () => {
      t = await openTestDb(name);
      store = new TemplateStore(t.db);
      const accounts = new AccountStore(t.db);
      await accounts.insertAccount({ id: 'a1', name: 'alice', sshKeys: [], createdAt: 1 });
      await accounts.insertAccount({ id: 'a2', name: 'bob', sshKeys: [], createdAt: 1 });
    });
    after(() => t?.cleanup());

    test('a template round-trips with every field', async () => {
      await store.insert(template());
      assert.deepEqual(await store.get('t1'), template());
      assert.equal(await store.get('nope'), null);
    });

    test('listOwned answers only the account’s templates and listPublic only the public ones', async () => {
      await store.insert(template({ id: 't2', accountId: 'a2', createdAt: 1_700_000_000_001 }));
      await store.insert(template({ id: 'pub1', accountId: null, isPublic: true, createdAt: 1_700_000_000_002 }));
      assert.deepEqual(
        (await store.listOwned('a1')).map((x) => x.id),
        ['t1'],
      );
      assert.deepEqual(
        (await store.listOwned('a2')).map((x) => x.id),
        ['t2'],
      );
      assert.deepEqual(
        (await store.listPublic()).map((x) => x.id),
        ['pub1'],
      );
    });

    test('insertIfMissing inserts once and leaves an existing row alone', async () => {
      assert.equal(
        await store.insertIfMissing(template({ id: 'pub2', accountId: null, isPublic: true, name: 'first' })),
        true,
      );
      assert.equal(
        await store.insertIfMissing(template({ id: 'pub2', accountId: null, isPublic: true, name: 'second' })),
        false,
      );
      assert.equal((await store.get('pub2'))?.name, 'first');
    });

    test('update changes only the fields given, including clearing to null', async () => {
      assert.equal(
        await store.update('t1', { name: 'renamed', env: {}, volumeMountPath: null, isServerless: true, updatedAt: 5 }),
        true,
      );
      const after = await store.get('t1');
      assert.deepEqual(
        after,
        template({ name: 'renamed', env: {}, volumeMountPath: null, isServerless: true, updatedAt: 5 }),
      );
      assert.equal(await store.update('nope', { name: 'x' }), false);
    });

    test('podsReferencing lists the account’s pods that are not TERMINATED', async () => {
      const pod = (id: string, accountId: string, status: string, templateId: string | null, createdAt: number) =>
        t.db.kysely
          .insertInto('pods')
          .values({
            id,
            account_id: accountId,
            name: id,
            status,
            desired_status: 'RUNNING',
            image: 'x',
            disk: 20,
            cloud: 'SECURE',
            template_id: templateId,
            created_at: createdAt,
            updated_at: createdAt,
          } as never)
          .execute();
      await pod('p1', 'a1', 'RUNNING', 't1', 1);
      await pod('p2', 'a1', 'TERMINATED', 't1', 2);
      await pod('p3', 'a1', 'EXITED', 't1', 3);
      await pod('p4', 'a1', 'RUNNING', 't2', 4);
      assert.deepEqual(await store.podsReferencing('a1', 't1'), ['p1', 'p3']);
      assert.deepEqual(await store.podsReferencing('a2', 't1'), []);
    });

    test('delete removes the row once; a transaction that throws leaves it', async () => {
      await assert.rejects(
        t.db.withTransaction(async (tx) => {
          await store.delete('t2', tx);
          throw new Error('boom');
        }),
      );
      assert.ok(await store.get('t2'));
      assert.equal(await store.delete('t2'), true);
      assert.equal(await store.delete('t2'), false);
      assert.equal(await store.get('t2'), null);
    });
  });
}
