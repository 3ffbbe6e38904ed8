/**
 * Usage: what the account spent per day over the last 30 days (`GET /v2/billing`, docs/billing.md),
 * by resource family as a uPlot chart, and by pod and network volume as a table
 * (`/v2/billing/pods`, `/v2/billing/network-volumes`). Loaded on first open with the chart library.
 */
import { useEffect, useMemo, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { api } from '../api.js';
import { money, ProblemNote, usePoll } from '../ui.js';

type Amounts = Record<string, number | string>;
interface Billing<R> {
  records: Array<R & { startTime: string; endTime: string }>;
  metadata: { totals: Record<string, number> };
}

const DAYS = 30;

/** The families on the chart: a label, the colour, and the amounts of a `/v2/billing` record it adds. */
const FAMILIES: Array<[string, string, string[]]> = [
  ['Pods', '#0172ad', ['podGpuAmount', 'podCpuAmount', 'podDiskAmount']],
  [
    'Serverless',
    '#8e44ad',
    ['serverlessGpuAmount', 'serverlessCpuAmount', 'serverlessDiskAmount', 'serverlessFeeAmount'],
  ],
  ['Network volumes', '#2e7d32', ['storageStandardAmount', 'storageHighPerformanceAmount']],
  ['Clusters', '#c0392b', ['clusterGpuAmount', 'clusterDiskAmount', 'clusterNetworkingAmount']],
  ['Public endpoints', '#d4a017', ['endpointAmount']],
];

const num = (x: number | string | undefined) => (typeof x === 'number' ? x : 0);

function UsageChart({ data, total }: { data: uPlot.AlignedData; total: number }) {
  const el = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    if (!el.current) return;
    plot.current = new uPlot(
      {
        width: Math.max(320, el.current.clientWidth),
        height: 240,
        series: [
          { value: (_u, v) => (v == null ? '' : new Date(v * 1000).toISOString().slice(0, 10)) },
          ...FAMILIES.map(([label, stroke]) => ({
            label,
            stroke,
            width: 2,
            value: (_u: uPlot, v: number | null) => (v == null ? '' : money(v)),
          })),
        ],
        axes: [{}, { size: 60, values: (_u, vs) => vs.map((v) => `$${v}`) }],
        scales: { y: { range: (_u, _min, max) => [0, Math.max(0.01, max)] } },
        legend: { show: true },
      },
      data,
      el.current,
    );
    return () => {
      plot.current?.destroy();
      plot.current = null;
    };
  }, []);
  useEffect(() => plot.current?.setData(data), [data]);
  return (
    <figure>
      <figcaption>Spend per day (USD), last {DAYS} days</figcaption>
      <div
        ref={el}
        class="usage-chart"
        data-usage-chart
        role="img"
        aria-label={`Spend per day by resource family: ${money(total)} over the last ${DAYS} days`}
      />
    </figure>
  );
}

export function UsagePage() {
  const query = `bucketSize=day&lastN=${DAYS}`;
  const { value, problem } = usePoll(
    () =>
      Promise.all([
        api<Billing<Amounts>>('GET', `/v2/billing?${query}`),
        api<Billing<{ podId: string; totalAmount: number }>>('GET', `/v2/billing/pods?${query}`),
        api<Billing<{ networkVolumeId: string; totalAmount: number }>>('GET', `/v2/billing/network-volumes?${query}`),
      ]),
    60_000,
  );
  const [all, pods, volumes] = value ?? [null, null, null];

  const chart = useMemo((): uPlot.AlignedData | null => {
    if (all === null) return null;
    const t = all.records.map((r) => Date.parse(r.startTime) / 1000);
    return [t, ...FAMILIES.map(([, , keys]) => all.records.map((r) => keys.reduce((s, k) => s + num(r[k]), 0)))];
  }, [all]);

  const byResource = useMemo(() => {
    const sums = new Map<string, { kind: string; total: number }>();
    const add = (kind: string, id: string, amount: number) => {
      const cur = sums.get(`${kind}:${id}`) ?? { kind, total: 0 };
      cur.total += amount;
      sums.set(`${kind}:${id}`, cur);
    };
    for (const r of pods?.records ?? []) add('pod', r.podId, r.totalAmount);
    for (const r of volumes?.records ?? []) add('network volume', r.networkVolumeId, r.totalAmount);
    return [...sums.entries()]
      .map(([key, v]) => ({ id: key.slice(key.indexOf(':') + 1), ...v }))
      .filter((r) => r.total > 0)
      .sort((a, b) => b.total - a.total)
      .slice(0, 50);
  }, [pods, volumes]);

  const total = all?.metadata.totals.totalAmount ?? 0;
  return (
    <section>
      <hgroup class="page-head">
        <h1>Usage</h1>
      </hgroup>
      <ProblemNote problem={problem} />
      {chart === null ? (
        <p aria-busy="true">Loading usage…</p>
      ) : (
        <>
          <p class="summary" data-usage-total>
            {money(total)} over the last {DAYS} days
          </p>
          <UsageChart data={chart} total={total} />
          <h2>By resource</h2>
          {byResource.length === 0 ? (
            <p>No pod or network volume spend in this period.</p>
          ) : (
            <div class="table-wrap">
              <table class="striped">
                <thead>
                  <tr>
                    <th scope="col">Resource</th>
                    <th scope="col">Kind</th>
                    <th scope="col">Spend</th>
                  </tr>
                </thead>
                <tbody>
                  {byResource.map((r) => (
                    <tr key={`${r.kind}:${r.id}`}>
                      <td>
                        {r.kind === 'pod' ? (
                          <a href={`#/pods/${encodeURIComponent(r.id)}`}>
                            <code>{r.id}</code>
                          </a>
                        ) : (
                          <code>{r.id}</code>
                        )}
                      </td>
                      <td>{r.kind}</td>
                      <td>{money(r.total)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </section>
  );
}
