import { memo } from 'preact/compat';
import { useMemo, useState } from 'preact/hooks';
import { takeEarly } from '../api.js';
import type { Pod } from '../types.js';
import { duration, money, ProblemNote, READ_ONLY_TITLE, StatusBadge, usePoll, useSession } from '../ui.js';

/** Rows shown at once: a screenful and a bit. The whole list is fetched; only this slice is rendered. */
const PAGE_SIZE = 50;

/** Seconds the pod has run this time: the runtime's figure, else since it started. */
export function uptimeOf(pod: Pod, now = Date.now()): number | null {
  if (pod.status !== 'RUNNING') return null;
  if (pod.runtime?.uptime !== undefined) return pod.runtime.uptime;
  return pod.startedAt ? Math.max(0, (now - Date.parse(pod.startedAt)) / 1000) : null;
}

export const computeOf = (pod: Pod): string =>
  pod.gpu ? `${pod.gpu.count} × ${pod.gpu.id}` : pod.cpu ? `${pod.cpu.vcpuCount} vCPU ${pod.cpu.id}` : '—';

/** Plain code-unit order: ISO dates and ids sort right, without the cost of locale collation. */
const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

type SortKey = 'name' | 'status' | 'gpu' | 'cost' | 'uptime' | 'dataCenter' | 'created';

const SORTS: Record<SortKey, (a: Pod, b: Pod) => number> = {
  name: (a, b) => a.name.localeCompare(b.name),
  status: (a, b) => a.status.localeCompare(b.status),
  gpu: (a, b) => computeOf(a).localeCompare(computeOf(b)),
  cost: (a, b) => a.cost - b.cost,
  uptime: (a, b) => (uptimeOf(a) ?? -1) - (uptimeOf(b) ?? -1),
  dataCenter: (a, b) => (a.dataCenterId ?? '').localeCompare(b.dataCenterId ?? ''),
  created: (a, b) => byText(a.createdAt, b.createdAt),
};

const COLUMNS: Array<[SortKey, string]> = [
  ['name', 'Name'],
  ['status', 'Status'],
  ['gpu', 'GPU'],
  ['cost', 'Cost/hr'],
  ['uptime', 'Uptime'],
  ['dataCenter', 'Data center'],
];

/** What a filter word matches: name, id, status, GPU, image and data center. */
const haystack = (p: Pod) =>
  `${p.name} ${p.id} ${p.status} ${computeOf(p)} ${p.image} ${p.dataCenterId ?? ''}`.toLowerCase();

/**
 * One row. Memoized on the fields it shows: the 3 s poll answers new objects for every pod, and a
 * row whose shown values did not change is not re-rendered. Uptime is shown to the minute past an
 * hour, so a running pod's row changes at most once a minute then.
 */
const PodRow = memo(
  ({ pod, up }: { pod: Pod; up: string }) => (
    <tr data-pod={pod.id}>
      <td>
        <a href={`#/pods/${encodeURIComponent(pod.id)}`}>{pod.name}</a>
      </td>
      <td>
        <StatusBadge status={pod.status} />
      </td>
      <td>{computeOf(pod)}</td>
      <td>{money(pod.cost)}</td>
      <td>{up}</td>
      <td>{pod.dataCenterId ?? '—'}</td>
    </tr>
  ),
  (a, b) =>
    a.up === b.up &&
    a.pod.id === b.pod.id &&
    a.pod.name === b.pod.name &&
    a.pod.status === b.pod.status &&
    a.pod.cost === b.pod.cost &&
    a.pod.dataCenterId === b.pod.dataCenterId &&
    computeOf(a.pod) === computeOf(b.pod),
);

export function PodsPage() {
  const { canWrite } = useSession();
  const { value, problem } = usePoll(() => takeEarly<{ pods: Pod[] }>('/v2/pods'), 3000);
  const pods = value?.pods ?? null;
  const [filter, setFilter] = useState('');
  const [sort, setSort] = useState<{ key: SortKey; desc: boolean }>({ key: 'created', desc: true });
  const [page, setPage] = useState(0);

  const shown = useMemo(() => {
    if (pods === null) return [];
    const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
    const matching = words.length === 0 ? [...pods] : pods.filter((p) => words.every((w) => haystack(p).includes(w)));
    const cmp = SORTS[sort.key];
    return matching.sort((a, b) => (sort.desc ? cmp(b, a) : cmp(a, b)) || byText(a.id, b.id));
  }, [pods, filter, sort]);

  const pages = Math.max(1, Math.ceil(shown.length / PAGE_SIZE));
  const current = Math.min(page, pages - 1);
  const slice = shown.slice(current * PAGE_SIZE, (current + 1) * PAGE_SIZE);
  const now = Date.now();
  const hourly = pods?.reduce((sum, p) => sum + p.cost, 0) ?? 0;
  const sortBy = (key: SortKey) => {
    setSort((s) => ({ key, desc: s.key === key ? !s.desc : false }));
    setPage(0);
  };

  return (
    <section>
      <hgroup class="page-head">
        <h1>Pods</h1>
        {canWrite ? (
          <a href="#/pods/new" role="button">
            Create pod
          </a>
        ) : (
          <button type="button" disabled title={READ_ONLY_TITLE}>
            Create pod
          </button>
        )}
      </hgroup>
      <ProblemNote problem={problem} />
      {pods === null ? (
        <p aria-busy="true">Loading pods…</p>
      ) : pods.length === 0 ? (
        <p>No pods yet.</p>
      ) : (
        <>
          <p class="summary" data-pod-count={pods.length}>
            {pods.length} pods · {pods.filter((p) => p.status === 'RUNNING').length} running · {money(hourly)}/hr
          </p>
          <div class="list-tools">
            <input
              type="search"
              name="filter"
              placeholder="Filter by name, id, status, GPU, image or data center"
              aria-label="Filter pods"
              value={filter}
              onInput={(e) => {
                setFilter(e.currentTarget.value);
                setPage(0);
              }}
            />
          </div>
          <div class="table-wrap">
            <table class="striped">
              <thead>
                <tr>
                  {COLUMNS.map(([key, label]) => (
                    <th
                      key={key}
                      scope="col"
                      aria-sort={sort.key === key ? (sort.desc ? 'descending' : 'ascending') : undefined}
                    >
                      <button type="button" class="sort" onClick={() => sortBy(key)}>
                        {label}
                        {sort.key === key ? (sort.desc ? ' ▼' : ' ▲') : ''}
                      </button>
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {slice.map((pod) => {
                  const up = uptimeOf(pod, now);
                  const upText = up === null ? '—' : up < 3600 ? duration(Math.floor(up / 10) * 10) : duration(up);
                  return <PodRow key={pod.id} pod={pod} up={upText} />;
                })}
              </tbody>
            </table>
          </div>
          <Pager page={current} pages={pages} total={shown.length} of={pods.length} onPage={setPage} size={PAGE_SIZE} />
        </>
      )}
    </section>
  );
}

function Pager(props: {
  page: number;
  pages: number;
  total: number;
  of: number;
  size: number;
  onPage: (page: number) => void;
}) {
  const { page, pages, total, of, size, onPage } = props;
  const first = total === 0 ? 0 : page * size + 1;
  const last = Math.min(total, (page + 1) * size);
  return (
    <nav class="pager" aria-label="Pages">
      <span data-page-range>
        {first}–{last} of {total}
        {total === of ? '' : ` (filtered from ${of})`}
      </span>
      <span>
        <button type="button" class="secondary outline" disabled={page === 0} onClick={() => onPage(0)}>
          First
        </button>{' '}
        <button type="button" class="secondary outline" disabled={page === 0} onClick={() => onPage(page - 1)}>
          Previous
        </button>{' '}
        <span>
          page {page + 1} of {pages}
        </span>{' '}
        <button type="button" class="secondary outline" disabled={page >= pages - 1} onClick={() => onPage(page + 1)}>
          Next
        </button>{' '}
        <button type="button" class="secondary outline" disabled={page >= pages - 1} onClick={() => onPage(pages - 1)}>
          Last
        </button>
      </span>
    </nav>
  );
}
