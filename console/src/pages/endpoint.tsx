import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { api, ApiProblem } from '../api.js';
import type { Endpoint, JobSummary } from '../types.js';
import { duration, ProblemNote, StatusBadge, usePoll, WriteButton } from '../ui.js';

interface Health {
  jobs: { completed: number; failed: number; inProgress: number; inQueue: number; retried: number };
  /** `suspended`: FlashBoot's frozen workers (a Gantry extension) */
  workers: {
    idle: number;
    running: number;
    initializing: number;
    throttled: number;
    unhealthy: number;
    suspended?: number;
  };
}

const HOUR = 3600;
const FINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT']);

/**
 * Per-minute series over the last hour, rebuilt from the endpoint's recent jobs (up to 1,000):
 * jobs finished per minute, and the queue depth at each minute (created, not yet started).
 */
function series(jobs: JobSummary[], nowSec: number): { t: number[]; done: number[]; queued: number[] } {
  const start = Math.floor((nowSec - HOUR) / 60) * 60;
  const t: number[] = [];
  for (let m = start; m <= nowSec; m += 60) t.push(m);
  const done = t.map(() => 0);
  const queued = t.map(() => 0);
  for (const j of jobs) {
    const created = Date.parse(j.createdAt) / 1000;
    const started =
      j.delayTime !== undefined ? created + j.delayTime / 1000 : j.status === 'IN_QUEUE' ? Infinity : created;
    if (FINAL.has(j.status) && j.executionTime !== undefined) {
      const i = Math.floor((started + j.executionTime / 1000 - start) / 60);
      if (i >= 0 && i < done.length) done[i]! += 1;
    }
    for (let i = 0; i < t.length; i++) if (created <= t[i]! && started > t[i]!) queued[i]! += 1;
  }
  return { t, done, queued };
}

function Chart({ title, t, values, label }: { title: string; t: number[]; values: number[]; label: string }) {
  const el = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    if (!el.current) return;
    const width = Math.max(280, el.current.clientWidth);
    plot.current = new uPlot(
      {
        width,
        height: 180,
        series: [{}, { label, stroke: '#0172ad', fill: 'rgba(1,114,173,0.12)', width: 2 }],
        axes: [{}, { size: 40 }],
        scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        legend: { show: true },
      },
      [t, values],
      el.current,
    );
    return () => {
      plot.current?.destroy();
      plot.current = null;
    };
  }, []);
  useEffect(() => plot.current?.setData([t, values]), [t, values]);
  return (
    <figure>
      <figcaption>{title}</figcaption>
      <div ref={el} role="img" aria-label={`${title}: ${values.reduce((a, b) => a + b, 0)} in the last hour`} />
    </figure>
  );
}

type Mode = 'run' | 'runsync' | 'stream';

function Playground({ endpointId }: { endpointId: string }) {
  const [input, setInput] = useState('{\n  "prompt": "hello"\n}');
  const [mode, setMode] = useState<Mode>('runsync');
  const [output, setOutput] = useState<string[]>([]);
  const [status, setStatus] = useState<string | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [busy, setBusy] = useState(false);
  const base = `/v2/${encodeURIComponent(endpointId)}`;
  const show = (value: unknown) => setOutput((o) => [...o, JSON.stringify(value, null, 2)]);

  const send = async () => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(input);
    } catch (err) {
      setProblem(new ApiProblem(0, 'INVALID_JSON', `The input is not JSON: ${String(err)}`));
      return;
    }
    setBusy(true);
    setProblem(null);
    setOutput([]);
    setStatus(null);
    try {
      if (mode === 'runsync') {
        const r = await api<{ id: string; status: string; output?: unknown; error?: unknown }>(
          'POST',
          `${base}/runsync`,
          { input: parsed },
        );
        setStatus(r.status);
        if (r.output !== undefined) show(r.output);
        if (r.error !== undefined) show({ error: r.error });
        return;
      }
      const job = await api<{ id: string; status: string }>('POST', `${base}/run`, { input: parsed });
      setStatus(job.status);
      for (;;) {
        if (mode === 'stream') {
          const s = await api<{ status: string; stream: Array<{ output: unknown }> }>(
            'GET',
            `${base}/stream/${encodeURIComponent(job.id)}`,
          );
          setStatus(s.status);
          for (const c of s.stream) show(c.output);
          if (FINAL.has(s.status)) return;
        } else {
          const s = await api<{ status: string; output?: unknown; error?: unknown }>(
            'GET',
            `${base}/status/${encodeURIComponent(job.id)}?wait=5000`,
          );
          setStatus(s.status);
          if (FINAL.has(s.status)) {
            if (s.output !== undefined) show(s.output);
            if (s.error !== undefined) show({ error: s.error });
            return;
          }
        }
      }
    } catch (err) {
      if (err instanceof ApiProblem) setProblem(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <article aria-labelledby="playground-title">
      <header id="playground-title">Request playground</header>
      <label for="playground-input">
        Input (JSON)
        <textarea id="playground-input" rows={4} value={input} onInput={(e) => setInput(e.currentTarget.value)} />
      </label>
      <fieldset>
        <legend>Send with</legend>
        {(['run', 'runsync', 'stream'] as const).map((m) => (
          <label key={m}>
            <input type="radio" name="mode" checked={mode === m} onChange={() => setMode(m)} />
            {m}
          </label>
        ))}
      </fieldset>
      <WriteButton busy={busy} onClick={() => void send()}>
        Send request
      </WriteButton>
      <ProblemNote problem={problem} />
      <p>
        Status: <span data-testid="playground-status">{status ?? '—'}</span>
      </p>
      <pre class="logs" aria-label="Job output" tabIndex={0}>
        {output.length ? output.join('\n') : 'Output appears here as it arrives.'}
      </pre>
    </article>
  );
}

/** A load-balancing endpoint takes requests at its own paths under its address, not jobs. */
function LoadBalancerAddress({ url }: { url: string | undefined }) {
  return (
    <article>
      <header>Load balancer</header>
      {url ? (
        <p>
          Requests go to{' '}
          <a href={url} target="_blank" rel="noopener noreferrer" data-testid="load-balancer-url">
            {url}
          </a>
          <code>/{'{path}'}</code>, with your API key in <code>Authorization: Bearer</code>; the workers answer them
          directly. This endpoint has no job queue.
        </p>
      ) : (
        <p>The pod HTTP proxy is off on this server, so this load-balancing endpoint cannot take requests.</p>
      )}
    </article>
  );
}

export function EndpointPage({ id }: { id: string }) {
  const enc = encodeURIComponent(id);
  const { value: endpoint, problem } = usePoll(() => api<Endpoint>('GET', `/v2/serverless/${enc}`), 15000, [id]);
  const { value: health } = usePoll(() => api<Health>('GET', `/v2/${enc}/health`), 3000, [id]);
  const { value: recent } = usePoll(
    () => api<{ requests: JobSummary[] }>('GET', `/v2/${enc}/requests?limit=1000`),
    10000,
    [id],
  );
  const [now, setNow] = useState(() => Math.floor(Date.now() / 1000));
  useEffect(() => setNow(Math.floor(Date.now() / 1000)), [recent]);
  if (!endpoint) return problem ? <ProblemNote problem={problem} /> : <p aria-busy="true">Loading endpoint…</p>;
  const jobs = recent?.requests ?? [];
  const s = series(jobs, now);
  const w = health?.workers;
  const q = health?.jobs;
  return (
    <section>
      <nav aria-label="breadcrumb">
        <ul>
          <li>
            <a href="#/serverless">Serverless</a>
          </li>
          <li>{endpoint.name}</li>
        </ul>
      </nav>
      <h1>{endpoint.name}</h1>
      <p>
        <code>{endpoint.id}</code> · <code>{endpoint.image}</code> · pools {endpoint.gpu?.pools.join(', ')} · workers{' '}
        {endpoint.workers.min}–{endpoint.workers.max}
        {endpoint.flashboot === 'FLASHBOOT' ? (
          <>
            {' '}
            · FlashBoot: suspended workers kept up to{' '}
            <span data-testid="flashboot-keep">{duration(endpoint.flashBootKeepSeconds ?? 600)}</span>
          </>
        ) : null}
      </p>
      <div class="grid cards">
        <article>
          <header>Workers</header>
          <dl class="counts" data-testid="workers">
            {(['running', 'idle', 'suspended', 'initializing', 'throttled', 'unhealthy'] as const).map((k) => (
              <div key={k} data-count={k}>
                <dt>{k}</dt>
                <dd>{w ? (w[k] ?? 0) : '—'}</dd>
              </div>
            ))}
          </dl>
        </article>
        <article>
          <header>Jobs</header>
          <dl class="counts">
            {(['inQueue', 'inProgress', 'completed', 'failed', 'retried'] as const).map((k) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd>{q ? q[k] : '—'}</dd>
              </div>
            ))}
          </dl>
        </article>
      </div>
      <div class="grid">
        <Chart title="Queue depth, last hour" label="queued" t={s.t} values={s.queued} />
        <Chart title="Jobs finished per minute, last hour" label="finished" t={s.t} values={s.done} />
      </div>
      {endpoint.type === 'LOAD_BALANCER' ? (
        <LoadBalancerAddress url={endpoint.loadBalancerUrl} />
      ) : (
        <Playground endpointId={endpoint.id} />
      )}
      <h2>Recent jobs</h2>
      {jobs.length === 0 ? (
        <p>No jobs yet.</p>
      ) : (
        <div class="table-wrap">
          <table class="striped">
            <thead>
              <tr>
                <th scope="col">Job</th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
                <th scope="col">Delay</th>
                <th scope="col">Execution</th>
              </tr>
            </thead>
            <tbody>
              {jobs.slice(0, 25).map((j) => (
                <tr key={j.id}>
                  <td>
                    <code>{j.id}</code>
                  </td>
                  <td>
                    <StatusBadge status={j.status} />
                  </td>
                  <td>{new Date(j.createdAt).toLocaleTimeString()}</td>
                  <td>{j.delayTime === undefined ? '—' : duration(j.delayTime / 1000)}</td>
                  <td>{j.executionTime === undefined ? '—' : `${j.executionTime} ms`}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
