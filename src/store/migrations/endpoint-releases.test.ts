import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { dialects, openTestDb, type TestDb } from '../../../test/support/harness.js';
import { defaultCatalog } from '../../domain/catalog.js';
import { FakeClock } from '../../domain/clock.js';
import type { Template } from '../../domain/template.js';
import { EndpointsService } from '../../serverless/endpoints-service.js';
import { AccountStore } from '../account-store.js';
import { EndpointStore } from '../endpoint-store.js';
import { endpointReleases } from './endpoint-releases.js';

const template = (over: Partial<Template> = {}): Template => ({
  id: 't1',
  accountId: 'a1',
  name: 'worker',
  imageName: 'w:1',
  args: '',
  containerDiskInGb: 20,
  volumeInGb: 0,
  volumeMountPath: null,
  ports: [],
  env: {},
  containerRegistryAuthId: null,
  startSsh: false,
  startJupyter: false,
  allowedCudaVersions: [],
  isServerless: true,
  isPublic: false,
  category: 'NVIDIA',
  readme: '',
  createdAt: 0,
  updatedAt: 0,
  ...over,
});

for (const { name, skip } of dialects()) {
  describe(`endpoint releases (migration 0014) on ${name}`, { skip }, () => {
    let t: TestDb;
    let store: EndpointStore;
    let service: EndpointsService;
    const clock = new FakeClock(1_000_000);
    const templates = new Map([
      ['t1', template()],
      ['t2', template({ id: 't2', imageName: 'w:2' })],
    ]);
    before(async () => {
      t = await openTestDb(name);
      store = new EndpointStore(t.db);
      await new AccountStore(t.db).insertAccount({ id: 'a1', name: 'alice', sshKeys: [], createdAt: 1 });
      service = new EndpointsService({
        store,
        clock,
        templates: { get: (_a: string, id: string) => Promise.resolve(templates.get(id)!) },
        volumes: { get: () => Promise.reject(new Error('no volumes here')) },
        config: { catalog: defaultCatalog() },
      });
    });
    after(() => t?.cleanup());

    test('an endpoint stored before releases existed gets one at its current version, dated by its last change', async () => {
      const e = await service.create('a1', { name: 'old', templateId: 't1', gpuIds: 'ADA_24' });
      await store.delete('a1', e.id);
      await store.insert({ ...e, version: 3, updatedAt: 4_321 });
      const backfill = endpointReleases(name).filter((s) => s.startsWith('INSERT INTO endpoint_releases'));
      assert.equal(backfill.length, 1);
      for (const s of backfill) await sql.raw(s).execute(t.db.kysely);
      const [release, ...more] = await store.releases(e.id);
      assert.equal(more.length, 0);
      assert.deepEqual(
        [release!.id, release!.version, release!.source, release!.diff, release!.createdAt],
        [`rel-${e.id}`, 3, 'MANUAL', [], 4_321],
      );
      await store.delete('a1', e.id);
    });

    test('a release is written with each change of what workers run, at the clock’s time, and none for scaling-only changes', async () => {
      const e = await service.create('a1', { name: 'ep', templateId: 't1', gpuIds: 'ADA_24' });
      clock.advance(1_000);
      await service.update('a1', e.id, { workersMax: 9, scalerValue: 2, name: 'renamed' });
      clock.advance(1_000);
      await service.update('a1', e.id, { templateId: 't2', gpuIds: 'ADA_24,AMPERE_24' });
      const releases = await store.releases(e.id);
      assert.deepEqual(
        releases.map((r) => [r.version, r.createdAt]),
        [
          [3, 1_002_000],
          [1, 1_000_000],
        ],
      );
      assert.deepEqual(releases[0]!.diff, [
        { field: 'templateId', old: 't1', new: 't2' },
        { field: 'template.imageName', old: 'w:1', new: 'w:2' },
        { field: 'gpuIds', old: ['ADA_24'], new: ['ADA_24', 'AMPERE_24'] },
      ]);
    });

    test('an update that loses a race answers 409 CONFLICT and writes no release', async () => {
      const e = await service.create('a1', { name: 'race', templateId: 't1', gpuIds: 'ADA_24' });
      await store.replace({ ...e, version: 2 }, 1); // another writer got there first
      class StaleReads extends EndpointStore {
        override async get(accountId: string, id: string) {
          const row = await super.get(accountId, id);
          return row && { ...row, version: 1 };
        }
      }
      const racing = new EndpointsService({
        store: new StaleReads(t.db),
        clock,
        templates: { get: (_a: string, id: string) => Promise.resolve(templates.get(id)!) },
        volumes: { get: () => Promise.reject(new Error('no volumes here')) },
        config: { catalog: defaultCatalog() },
      });
      await assert.rejects(racing.update('a1', e.id, { gpuCount: 2 }), { code: 'CONFLICT' });
      assert.deepEqual(
        (await store.releases(e.id)).map((r) => r.version),
        [1],
      );
    });
  });
}
