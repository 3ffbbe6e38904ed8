// `GET /v2/pods` paging (Gantry extension; docs/api.md "Paging the pod list"): search, sort,
// order, offset and limit over the caller's pods, with the figures of every matching pod in
// headers, on SQLite and PostgreSQL. Without those parameters the answer is the spec's list.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';
import { FakeClock } from '../src/domain/clock.js';

const GPU = 'NVIDIA GeForce RTX 4090';
const fleet = [
  {
    id: 'tx-4090',
    dataCenterId: 'US-TX-3',
    gpuTypeId: GPU,
    gpuCount: 64,
    cudaVersion: '12.4',
    vcpus: 512,
    memoryGb: 4096,
    portRange: [20000, 20999],
  },
  {
    id: 'ro-a5000',
    dataCenterId: 'EU-RO-1',
    gpuTypeId: 'NVIDIA RTX A5000',
    gpuCount: 16,
    cudaVersion: '12.1',
    portRange: [21000, 21999],
  },
  {
    id: 'tx-cpu',
    dataCenterId: 'US-TX-3',
    cpuFlavors: ['cpu3c'],
    vcpus: 256,
    memoryGb: 2048,
    portRange: [22000, 22999],
  },
];

const SORTS = ['created', 'name', 'status', 'gpu', 'cost', 'uptime', 'dataCenter'] as const;

interface Pod {
  id: string;
  name: string;
  status: string;
  image: string;
  cost: number;
  dataCenterId: string | null;
  createdAt: string;
  gpu?: { id: string; count: number };
  cpu?: { id: string; vcpuCount: number };
  runtime: { uptime?: number } | null;
}

for (const { name: dialect, skip } of dialects()) {
  describe(`GET /v2/pods paging on ${dialect}`, { skip }, () => {
    let t: TestApp;
    let clock: FakeClock;
    let a: { accountId: string; key: string; readKey: string };
    let b: { accountId: string; key: string; readKey: string };
    const mine: Pod[] = [];
    let theirs: Pod[] = [];

    const list = async (key: string, qs = ''): Promise<{ res: LightMyRequestResponse; pods: Pod[] }> => {
      const res = await t.request(key, 'GET', `/v2/pods${qs}`);
      assert.equal(res.statusCode, 200, res.body);
      return { res, pods: json<{ pods: Pod[] }>(res).pods };
    };
    const header = (res: LightMyRequestResponse, name: string) => res.headers[name] as string | undefined;

    async function createPod(key: string, body: Record<string, unknown>): Promise<Pod> {
      const res = await t.request(key, 'POST', '/v2/pods', { image: 'ubuntu:22.04', gpu: { id: GPU }, ...body });
      assert.equal(res.statusCode, 201, res.body);
      return json<Pod>(res);
    }

    async function waitForStatus(key: string, id: string, status: string): Promise<void> {
      const deadline = Date.now() + 10_000;
      let last = '';
      while (Date.now() < deadline) {
        last = json<Pod>(await t.request(key, 'GET', `/v2/pods/${id}`)).status;
        if (last === status) return;
        await new Promise((r) => setTimeout(r, 10));
      }
      assert.fail(`pod ${id} did not reach ${status} (last: ${last})`);
    }

    before(async () => {
      clock = new FakeClock(Date.UTC(2026, 10, 1));
      t = await createTestApp({
        dialect,
        clock,
        file: {
          rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 },
          quotas: { pods: 1_000, gpus: 1_000 },
          fleet,
        },
      });
      a = await t.newAccount('paging-a');
      b = await t.newAccount('paging-b');
      // 23 pods: names with mixed case and repeats, GPU and CPU pods, two data centers, pods
      // created in the same millisecond (ties fall to the id), some stopped (cost 0, no uptime)
      const names = ['alpha', 'Bravo', 'charlie', 'alpha', 'delta', 'Echo', 'foxtrot', 'golf'];
      for (let i = 0; i < 23; i++) {
        const body: Record<string, unknown> = { name: `${names[i % names.length]}-${i % 3}` };
        if (i % 5 === 1) Object.assign(body, { gpu: { id: 'NVIDIA RTX A5000', count: 2 } });
        if (i % 7 === 3) Object.assign(body, { gpu: undefined, cpu: { id: 'cpu3c', vcpuCount: 2 } });
        if (i % 4 === 2) Object.assign(body, { image: 'nginx:1.27' });
        mine.push(await createPod(a.key, body));
        if (i % 3 !== 0) clock.advance(1_000);
      }
      for (const pod of mine) await waitForStatus(a.key, pod.id, 'RUNNING');
      for (const pod of mine.filter((_, i) => i % 6 === 4)) {
        const res = await t.request(a.key, 'POST', `/v2/pods/${pod.id}/action`, { action: 'stop' });
        assert.equal(res.statusCode, 200, res.body);
      }
      for (let i = 0; i < 4; i++) theirs.push(await createPod(b.key, { name: `alpha-${i}` }));
      theirs = (await list(b.key)).pods;
      clock.advance(5_000);
    });
    after(() => t?.close());

    test('without paging parameters the answer is the whole list, oldest first, with no paging headers', async () => {
      const { res, pods } = await list(a.key);
      assert.deepEqual(Object.keys(json(res)), ['pods']);
      assert.deepEqual(
        pods.map((p) => p.id),
        mine.map((p) => p.id),
      );
      for (const name of ['x-total-count', 'x-gantry-running-count', 'x-gantry-cost-per-hr'])
        assert.equal(header(res, name), undefined, name);
    });

    test('for every sort and order, the pages of a query hold every pod exactly once, in the order of the whole sorted list', async () => {
      const all = new Set(mine.map((p) => p.id));
      for (const sort of SORTS)
        for (const order of ['asc', 'desc'] as const) {
          const whole = (await list(a.key, `?sort=${sort}&order=${order}`)).pods.map((p) => p.id);
          assert.equal(whole.length, all.size, `${sort} ${order}`);
          const paged: string[] = [];
          for (let offset = 0; ; offset += 5) {
            const { res, pods } = await list(a.key, `?sort=${sort}&order=${order}&offset=${offset}&limit=5`);
            assert.equal(header(res, 'x-total-count'), String(all.size));
            assert.ok(pods.length <= 5);
            if (pods.length === 0) break;
            paged.push(...pods.map((p) => p.id));
          }
          assert.deepEqual(paged, whole, `${sort} ${order}: the pages are the sorted list cut in fives`);
          assert.equal(new Set(paged).size, paged.length, `${sort} ${order}: no pod on two pages`);
          assert.deepEqual(new Set(paged), all, `${sort} ${order}: every pod on a page`);
        }
    });

    test('each sort orders by its column, ties by pod id, and desc reverses the column only', async () => {
      const byWords = new Intl.Collator('en').compare;
      const gpuOf = (p: Pod) =>
        p.gpu ? `${p.gpu.count} × ${p.gpu.id}` : p.cpu ? `${p.cpu.vcpuCount} vCPU ${p.cpu.id}` : '';
      const column: Record<(typeof SORTS)[number], (x: Pod, y: Pod) => number> = {
        created: (x, y) => Date.parse(x.createdAt) - Date.parse(y.createdAt),
        name: (x, y) => byWords(x.name, y.name),
        status: (x, y) => byWords(x.status, y.status),
        gpu: (x, y) => byWords(gpuOf(x), gpuOf(y)),
        cost: (x, y) => x.cost - y.cost,
        uptime: (x, y) => (x.runtime?.uptime ?? -1) - (y.runtime?.uptime ?? -1),
        dataCenter: (x, y) => byWords(x.dataCenterId ?? '', y.dataCenterId ?? ''),
      };
      for (const sort of SORTS)
        for (const order of ['asc', 'desc'] as const) {
          const { pods } = await list(a.key, `?sort=${sort}&order=${order}&limit=500`);
          const sign = order === 'desc' ? -1 : 1;
          for (let i = 1; i < pods.length; i++) {
            const c = sign * column[sort](pods[i - 1]!, pods[i]!);
            assert.ok(c <= 0, `${sort} ${order}: ${pods[i - 1]!.id} before ${pods[i]!.id}`);
            if (c === 0) assert.ok(pods[i - 1]!.id < pods[i]!.id, `${sort} ${order}: a tie falls to the id`);
          }
        }
      // the pods were made with ties in creation time and in name, and with both statuses
      const created = (await list(a.key, '?sort=created')).pods;
      assert.ok(created.some((p, i) => i > 0 && p.createdAt === created[i - 1]!.createdAt));
      const names = (await list(a.key, '?sort=name')).pods.map((p) => p.name);
      assert.ok(names.indexOf('Bravo-1') > names.indexOf('alpha-0'), 'names in a reader’s order, not by code unit');
      const statuses = new Set(created.map((p) => p.status));
      assert.deepEqual(statuses, new Set(['RUNNING', 'EXITED']));
    });

    test('a page keeps its order on the next poll while the list does not change, uptime included', async () => {
      for (const sort of ['uptime', 'cost', 'created'] as const) {
        const first = (await list(a.key, `?sort=${sort}&order=desc&limit=7&offset=7`)).pods.map((p) => p.id);
        clock.advance(1_500);
        const again = (await list(a.key, `?sort=${sort}&order=desc&limit=7&offset=7`)).pods.map((p) => p.id);
        assert.deepEqual(again, first, sort);
      }
    });

    test('the headers count every pod that matches, the running ones and their cost per hour, whatever the page', async () => {
      const everyPod = (await list(a.key)).pods;
      const running = everyPod.filter((p) => p.status === 'RUNNING');
      const cost = Math.round(everyPod.reduce((s, p) => s + p.cost, 0) * 10_000) / 10_000;
      assert.ok(running.length > 0 && running.length < everyPod.length);
      for (const qs of ['?limit=1', '?limit=3&offset=20', '?offset=1000']) {
        const { res, pods } = await list(a.key, qs);
        assert.equal(header(res, 'x-total-count'), String(everyPod.length), qs);
        assert.equal(header(res, 'x-gantry-running-count'), String(running.length), qs);
        assert.equal(Number(header(res, 'x-gantry-cost-per-hr')), cost, qs);
        if (qs === '?offset=1000') assert.deepEqual(pods, [], 'past the end: an empty page');
      }
      // the spec's filters apply before the page is cut
      const { res, pods } = await list(a.key, '?status=RUNNING&limit=2');
      assert.equal(header(res, 'x-total-count'), String(running.length));
      assert.ok(pods.every((p) => p.status === 'RUNNING'));
    });

    test('search keeps the pods in which every word is found in name, id, status, GPU, image or data center, in any case', async () => {
      const ids = async (search: string) => {
        const { res, pods } = await list(a.key, `?search=${encodeURIComponent(search)}&limit=500`);
        assert.equal(header(res, 'x-total-count'), String(pods.length));
        return pods.map((p) => p.id).sort();
      };
      const expect = (keep: (p: Pod) => boolean) =>
        mine
          .filter(keep)
          .map((p) => p.id)
          .sort();
      assert.deepEqual(
        await ids('ALPHA'),
        expect((p) => p.name.startsWith('alpha')),
      );
      assert.deepEqual(
        await ids('nginx a5000'),
        expect((p) => p.image.startsWith('nginx') && p.gpu?.id === 'NVIDIA RTX A5000'),
      );
      assert.deepEqual(
        await ids('eu-ro-1'),
        expect((p) => p.dataCenterId === 'EU-RO-1'),
      );
      assert.deepEqual(
        await ids('vcpu'),
        expect((p) => p.cpu !== undefined),
      );
      assert.deepEqual(await ids(mine[5]!.id.toUpperCase()), [mine[5]!.id]);
      assert.deepEqual(
        await ids('  '),
        expect(() => true),
        'blank: every pod',
      );
      assert.deepEqual(await ids('no-such-word'), []);
    });

    test("another account's pods never appear on a page, in a search or in the counts", async () => {
      const mineIds = new Set(mine.map((p) => p.id));
      for (const qs of [
        '?limit=500',
        '?search=alpha&limit=500',
        `?search=${theirs[0]!.id}`,
        '?sort=name&offset=0&limit=50',
      ]) {
        const { res, pods } = await list(a.key, qs);
        assert.ok(
          pods.every((p) => mineIds.has(p.id)),
          qs,
        );
        assert.ok(Number(header(res, 'x-total-count')) <= mine.length, qs);
      }
      const { res, pods } = await list(b.key, `?search=${encodeURIComponent(mine[0]!.id)}&limit=10`);
      assert.deepEqual(pods, []);
      assert.equal(header(res, 'x-total-count'), '0');
      const theirPage = await list(b.key, '?limit=500');
      assert.deepEqual(theirPage.pods.map((p) => p.id).sort(), theirs.map((p) => p.id).sort());
      assert.equal(header(theirPage.res, 'x-total-count'), String(theirs.length));
      // a read key pages as well
      assert.equal((await list(a.readKey, '?limit=2')).pods.length, 2);
    });

    test('bad paging parameters are refused with a 400 problem naming the parameter and its bound', async () => {
      const cases: Array<[string, RegExp]> = [
        ['limit=0', /limit: must be >= 1/],
        ['limit=501', /limit: must be <= 500/],
        ['limit=abc', /limit: must be an integer/],
        ['limit=2.5', /limit: must be an integer/],
        ['limit=1&limit=2', /limit: must be an integer/],
        ['offset=-1', /offset: must be >= 0/],
        ['offset=1000001', /offset: must be <= 1000000/],
        ['sort=cost;drop', /sort: must be one of created, name, status, gpu, cost, uptime, dataCenter/],
        ['order=up', /order: must be one of asc, desc/],
        [`search=${'x'.repeat(201)}`, /search: must NOT have more than 200 characters/],
      ];
      for (const [qs, detail] of cases) {
        const res = await t.request(a.key, 'GET', `/v2/pods?${qs}`);
        assert.equal(res.statusCode, 400, `${qs}: ${res.body}`);
        assert.match(String(res.headers['content-type']), /application\/problem\+json/);
        assert.match(json(res).detail, detail, qs);
        assert.equal(json(res).code, 'INVALID_PARAMETER');
      }
      assert.equal(
        (await t.request(null, 'GET', '/v2/pods?limit=5')).statusCode,
        401,
        'paging needs a key like the list',
      );
    });

    test('the OpenAPI document lists the paging parameters and the headers a page carries', async () => {
      const doc = json(await t.request(null, 'GET', '/v2/openapi.json'));
      const op = doc.paths['/v2/pods'].get;
      const params = new Map<string, any>(op.parameters.map((p: any) => [p.name, p]));
      for (const name of ['search', 'sort', 'order', 'offset', 'limit']) {
        assert.equal(params.get(name)?.in, 'query', name);
        assert.match(params.get(name).description, /Gantry extension/, name);
      }
      assert.equal(params.get('limit').schema.maximum, 500);
      assert.deepEqual(Object.keys(op.responses['200'].headers).sort(), [
        'x-gantry-cost-per-hr',
        'x-gantry-running-count',
        'x-total-count',
      ]);
    });
  });
}
