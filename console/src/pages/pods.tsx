import { memo } from 'preact/compat';
import { useEffect, useState } from 'preact/hooks';
import { getWithHeaders, takeEarly } from '../api.js';
import type { Pod } from '../types.js';
import { duration, money, ProblemNote, READ_ONLY_TITLE, StatusBadge, usePoll, useSession } from '../ui.js';

/**
 * Rows shown at once: a screenful and a bit. The server searches, sorts and pages the list
 * (`GET /v2/pods?limit=…`, docs/api.md "Paging the pod list"): the page fetches, and its poll
 * refreshes, only the rows it shows.
 */
const PAGE_SIZE = 50;

/** Seconds the pod has run this time: the runtime's figure, else since it started. */
export function uptimeOf(pod: Pod, now = Date.now()): number | null {
  if (pod.status !== 'RUNNING') return null;
  if (pod.runtime?.uptime !== undefined) return pod.runtime.uptime;
  return pod.startedAt ? Math.max(0, (now - Date.parse(pod.startedAt)) / 1000) : null;
}

export const computeOf = (pod: Pod): string =>
  pod.gpu ? `${pod.gpu.count} × ${pod.gpu.id}` : pod.cpu ? `${pod.cpu.vcpuCount} vCPU ${pod.cpu.id}` : '—';

/** The API's `sort` values (src/pods/pod-listing.ts). */
type SortKey = 'name' | 'status' | 'gpu' | 'cost' | 'uptime' | 'dataCenter' | 'created';

const COLUMNS: Array<[SortKey, string]> = [
  ['name', 'Name'],
  ['status', 'Status'],
  ['gpu', 'GPU'],
  ['cost', 'Cost/hr'],
  ['uptime', 'Uptime'],
  ['dataCenter', 'Data center'],
];

interface ListQuery {
  search: string;
  sort: SortKey;
  desc: boolean;
  page: number;
}

/** What the page shows first: the newest pods. */
const FIRST: ListQuery = { search: '', sort: 'created', desc: true, page: 0 };

const listPath = (q: ListQuery): string =>
  `/v2/pods?limit=${PAGE_SIZE}&offset=${q.page * PAGE_SIZE}&sort=${q.sort}&order=${q.desc ? 'desc' : 'asc'}` +
  (q.search.trim() === '' ? '' : `&search=${encodeURIComponent(q.search.trim())}`);

/** A page of pods and the figures of every pod that matches (the answer's headers). */
interface PodsPage {
  /** the call that answered it: while it differs from the page's own, a new page is on its way */
  path: string;
  pods: Pod[];
  total: number;
  running: number;
  costPerHr: number;
}

const figure = (headers: Headers, name: string): number => Number(headers.get(name) ?? 0) || 0;

async function loadPage(path: string): Promise<PodsPage> {
  const { body, headers } = await getWithHeaders<{ pods: Pod[] }>(path);
  return {
    path,
    pods: body.pods,
    total: figure(headers, 'x-total-count'),
    running: figure(headers, 'x-gantry-running-count'),
    costPerHr: figure(headers, 'x-gantry-cost-per-hr'),
  };
}

/** At boot, beside the key check: the first page the pods page shows (app.tsx). */
export const startPodsEarly = (start: (path: string, load: () => Promise<unknown>) => void): void => {
  const path = listPath(FIRST);
  start(path, () => loadPage(path));
};

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
  const [filter, setFilter] = useState('');
  const [query, setQuery] = useState<ListQuery>(FIRST);
  const path = listPath(query);
  // the poll restarts whenever the page, the order or the search changes, and fetches that page only
  const { value, problem } = usePoll(() => takeEarly(path, () => loadPage(path)), 3000, [path]);
  // the search follows the box once typing pauses, not on every key
  useEffect(() => {
    if (filter === query.search) return;
    const timer = setTimeout(() => setQuery((q) => ({ ...q, search: filter, page: 0 })), 200);
    return () => clearTimeout(timer);
  }, [filter, query.search]);

  const total = value?.total ?? 0;
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  // pods went away while a later page was shown (its own answer says so): show the last page there is
  useEffect(() => {
    if (value !== null && value.path === path && query.page > pages - 1) setQuery((q) => ({ ...q, page: pages - 1 }));
  }, [value, path, pages, query.page]);

  const searching = query.search.trim() !== '';
  const now = Date.now();
  const sortBy = (key: SortKey) =>
    setQuery((q) => ({ ...q, sort: key, desc: q.sort === key ? !q.desc : false, page: 0 }));
  const setPage = (page: number) => setQuery((q) => ({ ...q, page }));

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
      {value === null ? (
        <p aria-busy="true">Loading pods…</p>
      ) : total === 0 && !searching ? (
        <p>No pods yet.</p>
      ) : (
        <>
          <p class="summary" data-pod-count={total}>
            {total} {searching ? (total === 1 ? 'pod matches' : 'pods match') : total === 1 ? 'pod' : 'pods'} ·{' '}
            {value.running} running · {money(value.costPerHr)}/hr
          </p>
          <div class="list-tools">
            <input
              type="search"
              name="filter"
              placeholder="Filter by name, id, status, GPU, image or data center"
              aria-label="Filter pods"
              maxLength={200}
              value={filter}
              onInput={(e) => setFilter(e.currentTarget.value)}
            />
          </div>
          <div class="table-wrap">
            <table class="striped" aria-busy={value.path === path ? undefined : 'true'} data-list-page={query.page}>
              <thead>
                <tr>
                  {COLUMNS.map(([key, label]) => (
                    <th
                      key={key}
                      scope="col"
                      aria-sort={query.sort === key ? (query.desc ? 'descending' : 'ascending') : undefined}
                    >
                      <button type="button" class="sort" onClick={() => sortBy(key)}>
                        {label}
                        {query.sort === key ? (query.desc ? ' ▼' : ' ▲') : ''}
                      </button>
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {value.pods.map((pod) => {
                  const up = uptimeOf(pod, now);
                  const upText = up === null ? '—' : up < 3600 ? duration(Math.floor(up / 10) * 10) : duration(up);
                  return <PodRow key={pod.id} pod={pod} up={upText} />;
                })}
              </tbody>
            </table>
          </div>
          {total === 0 ? <p>No pod matches “{query.search.trim()}”.</p> : null}
          <Pager page={Math.min(query.page, pages - 1)} pages={pages} total={total} onPage={setPage} size={PAGE_SIZE} />
        </>
      )}
    </section>
  );
}

function Pager(props: { page: number; pages: number; total: number; size: number; onPage: (page: number) => void }) {
  const { page, pages, total, size, onPage } = props;
  const first = total === 0 ? 0 : page * size + 1;
  const last = Math.min(total, (page + 1) * size);
  return (
    <nav class="pager" aria-label="Pages">
      <span data-page-range>
        {first}–{last} of {total}
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
