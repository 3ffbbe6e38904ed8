import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiProblem, readEvents } from '../api.js';
import { navigate } from '../route.js';
import type { LogLine, Pod, PodAction, PodStatus } from '../types.js';
import { duration, Meter, money, ProblemNote, StatusBadge, usePoll, WriteButton } from '../ui.js';
import { computeOf, uptimeOf } from './pods.js';

const ACTION_LABELS: Record<PodAction, string> = {
  start: 'Start',
  stop: 'Stop',
  restart: 'Restart',
  terminate: 'Terminate',
};

/** The console keeps this many log lines on screen; older ones scroll out. */
const MAX_LOG_LINES = 2000;

function LogStream({ podId, status }: { podId: string; status: PodStatus }) {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [state, setState] = useState<'live' | 'ended' | 'connecting'>('connecting');
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const lastId = useRef<string | null>(null);
  const box = useRef<HTMLPreElement>(null);
  // A stream of a stopped pod ends; it is opened again when the pod runs again.
  const live = status === 'RUNNING' || status === 'STARTING' || status === 'PROVISIONING';
  useEffect(() => {
    const abort = new AbortController();
    setState('connecting');
    const since = lastId.current;
    // a stream opened again resumes after the last line shown (the server's Last-Event-ID)
    const path = `/v2/pods/${encodeURIComponent(podId)}/logs?tail=500`;
    readEvents(
      path,
      (e) => {
        let line: LogLine;
        try {
          line = JSON.parse(e.data) as LogLine;
        } catch {
          return;
        }
        if (e.id) lastId.current = e.id;
        setState('live');
        setLines((old) => (old.length >= MAX_LOG_LINES ? [...old.slice(-MAX_LOG_LINES + 1), line] : [...old, line]));
      },
      abort.signal,
      since,
    ).then(
      () => setState('ended'),
      (err: unknown) => {
        if (abort.signal.aborted) return;
        setState('ended');
        if (err instanceof ApiProblem) setProblem(err);
      },
    );
    return () => abort.abort();
  }, [podId, live]);
  useEffect(() => {
    const el = box.current;
    if (el && el.scrollHeight - el.scrollTop - el.clientHeight < 80) el.scrollTop = el.scrollHeight;
  }, [lines]);
  return (
    <section aria-labelledby="logs-title">
      <h2 id="logs-title">
        Logs{' '}
        <small class="stream-state">
          {state === 'live' ? '● live' : state === 'connecting' ? 'connecting…' : 'ended'}
        </small>
      </h2>
      <ProblemNote problem={problem} />
      <pre class="logs" ref={box} tabIndex={0} aria-label="Pod logs" aria-live="off" data-testid="logs">
        {lines.length === 0
          ? 'No output yet.'
          : lines.map((l, i) => (
              <div key={i} class={`log-${l.source}`}>
                <time>{l.ts.slice(11, 19)}</time> {l.source === 'system' ? '[system] ' : ''}
                {l.line}
              </div>
            ))}
      </pre>
    </section>
  );
}

function CopyField({ label, text }: { label: string; text: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div role="group" class="copy-field">
      <input readOnly value={text} aria-label={label} onFocus={(e) => e.currentTarget.select()} />
      <button
        type="button"
        class="secondary"
        onClick={() => {
          void navigator.clipboard?.writeText(text).then(() => {
            setCopied(true);
            setTimeout(() => setCopied(false), 1500);
          });
        }}
      >
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  );
}

export function PodPage({ id }: { id: string }) {
  const {
    value: pod,
    problem,
    setValue,
  } = usePoll(() => api<Pod>('GET', `/v2/pods/${encodeURIComponent(id)}`), 2000, [id]);
  const [timeline, setTimeline] = useState<Array<{ status: PodStatus; at: number }>>([]);
  const [acting, setActing] = useState<PodAction | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [actionProblem, setActionProblem] = useState<ApiProblem | null>(null);

  useEffect(() => {
    if (!pod) return;
    setTimeline((t) =>
      t.length > 0 && t[t.length - 1]!.status === pod.status ? t : [...t, { status: pod.status, at: Date.now() }],
    );
  }, [pod?.status]);

  if (!pod)
    return problem ? (
      <section>
        <h1>Pod {id}</h1>
        <ProblemNote problem={problem} />
        <a href="#/pods">Back to pods</a>
      </section>
    ) : (
      <p aria-busy="true">Loading pod…</p>
    );

  const act = async (action: PodAction) => {
    setActing(action);
    setActionProblem(null);
    try {
      const after = await api<Pod | null>('POST', `/v2/pods/${encodeURIComponent(id)}/action`, { action });
      if (action === 'terminate') return navigate('/pods');
      if (after) setValue(after);
    } catch (err) {
      if (err instanceof ApiProblem) setActionProblem(err);
    } finally {
      setActing(null);
      setConfirming(false);
    }
  };

  const up = uptimeOf(pod);
  const rt = pod.runtime;
  return (
    <section>
      <nav aria-label="breadcrumb">
        <ul>
          <li>
            <a href="#/pods">Pods</a>
          </li>
          <li>{pod.name}</li>
        </ul>
      </nav>
      <hgroup class="page-head">
        <h1>
          {pod.name} <StatusBadge status={pod.status} />
        </h1>
        <div class="actions">
          {pod.actions
            .filter((a) => a !== 'terminate')
            .map((a) => (
              <WriteButton key={a} busy={acting === a} disabled={acting !== null} onClick={() => void act(a)}>
                {ACTION_LABELS[a]}
              </WriteButton>
            ))}
          {pod.actions.includes('terminate') ? (
            confirming ? (
              <>
                <WriteButton class="danger" busy={acting === 'terminate'} onClick={() => void act('terminate')}>
                  Confirm terminate
                </WriteButton>
                <button type="button" class="secondary outline" onClick={() => setConfirming(false)}>
                  Keep it
                </button>
              </>
            ) : (
              <WriteButton class="secondary" disabled={acting !== null} onClick={() => setConfirming(true)}>
                Terminate
              </WriteButton>
            )
          ) : null}
        </div>
      </hgroup>
      <ProblemNote problem={actionProblem ?? problem} />
      {pod.statusReason ? <p class="status-reason">{pod.statusReason}</p> : null}
      <div class="grid cards">
        <article>
          <header>Details</header>
          <dl>
            <dt>Id</dt>
            <dd>
              <code>{pod.id}</code>
            </dd>
            <dt>Image</dt>
            <dd>
              <code>{pod.image}</code>
            </dd>
            <dt>Compute</dt>
            <dd>
              {computeOf(pod)} · {pod.cloud.toLowerCase()} · {pod.dataCenterId ?? 'not placed'}
              {pod.cudaVersion ? ` · CUDA ${pod.cudaVersion}` : ''}
            </dd>
            <dt>Cost</dt>
            <dd>{money(pod.cost)}/hr</dd>
            <dt>Uptime</dt>
            <dd>{up === null ? '—' : duration(up)}</dd>
          </dl>
        </article>
        <article>
          <header>Utilization</header>
          {rt && rt.cpu ? (
            <>
              <Meter label="CPU" value={rt.cpu.util} />
              <Meter label="Memory" value={rt.memory?.util ?? 0} />
              {(rt.gpus ?? []).map((g, i) => (
                <div key={i}>
                  <Meter label={`GPU ${i}`} value={g.util} />
                  <Meter label={`GPU ${i} memory`} value={g.memoryUtil} />
                </div>
              ))}
              {rt.gpus && rt.gpus.length === 0 && pod.gpu ? <small>No GPU figures from this host.</small> : null}
            </>
          ) : (
            <p>Figures appear while the pod runs.</p>
          )}
        </article>
        <article>
          <header>Status timeline</header>
          <ol class="timeline">
            <li>
              <time>{new Date(pod.createdAt).toLocaleTimeString()}</time> created
            </li>
            {pod.startedAt ? (
              <li>
                <time>{new Date(pod.startedAt).toLocaleTimeString()}</time> started
              </li>
            ) : null}
            {timeline.map((t) => (
              <li key={t.at}>
                <time>{new Date(t.at).toLocaleTimeString()}</time> <StatusBadge status={t.status} />
              </li>
            ))}
          </ol>
        </article>
      </div>
      <article>
        <header>Connect</header>
        {pod.httpProxy && pod.httpProxy.length > 0 ? (
          <ul class="ports" aria-label="HTTP ports through the proxy">
            {pod.httpProxy.map((h) => (
              <li key={h.port}>
                <a href={h.link ?? h.url} target="_blank" rel="noopener noreferrer">
                  Open port {h.port} (HTTP, through the proxy)
                </a>
              </li>
            ))}
          </ul>
        ) : null}
        {pod.ssh.proxy ? (
          <label>
            SSH (through the proxy; your account's SSH keys)
            <CopyField label="SSH command" text={pod.ssh.proxy.command} />
          </label>
        ) : null}
        {pod.ssh.direct ? (
          <label>
            SSH (direct, to the pod's sshd)
            <CopyField label="Direct SSH command" text={pod.ssh.direct.command} />
          </label>
        ) : null}
        {rt?.ports && rt.ports.length > 0 ? (
          <ul class="ports">
            {rt.ports.map((p) =>
              p.public !== null && p.ip ? (
                <li key={`${p.private}/${p.type}`}>
                  {p.type === 'http' ? (
                    <a href={`http://${p.ip}:${p.public}/`} target="_blank" rel="noopener noreferrer">
                      {p.private}/http → {p.ip}:{p.public}
                    </a>
                  ) : (
                    <span>
                      {p.private}/{p.type} → <code>{`${p.ip}:${p.public}`}</code>
                    </span>
                  )}
                </li>
              ) : (
                <li key={`${p.private}/${p.type}`}>
                  {p.private}/{p.type} (not published)
                </li>
              ),
            )}
          </ul>
        ) : (
          <p>{pod.ports.length ? `Ports ${pod.ports.join(', ')} are reachable while the pod runs.` : 'No ports.'}</p>
        )}
      </article>
      <LogStream podId={pod.id} status={pod.status} />
    </section>
  );
}
