import { api } from '../api.js';
import type { Pod } from '../types.js';
import { duration, money, ProblemNote, READ_ONLY_TITLE, StatusBadge, usePoll, useSession } from '../ui.js';

/** Seconds the pod has run this time: the runtime's figure, else since it started. */
export function uptimeOf(pod: Pod, now = Date.now()): number | null {
  if (pod.status !== 'RUNNING') return null;
  if (pod.runtime?.uptime !== undefined) return pod.runtime.uptime;
  return pod.startedAt ? Math.max(0, (now - Date.parse(pod.startedAt)) / 1000) : null;
}

export const computeOf = (pod: Pod): string =>
  pod.gpu ? `${pod.gpu.count} × ${pod.gpu.id}` : pod.cpu ? `${pod.cpu.vcpuCount} vCPU ${pod.cpu.id}` : '—';

export function PodsPage() {
  const { canWrite } = useSession();
  const { value, problem } = usePoll(() => api<{ pods: Pod[] }>('GET', '/v2/pods'), 3000);
  const pods = value?.pods ?? null;
  const now = Date.now();
  const hourly = pods?.reduce((sum, p) => sum + p.cost, 0) ?? 0;
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
          <p class="summary">
            {pods.length} pods · {pods.filter((p) => p.status === 'RUNNING').length} running · {money(hourly)}/hr
          </p>
          <div class="table-wrap">
            <table class="striped">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Status</th>
                  <th scope="col">GPU</th>
                  <th scope="col">Cost/hr</th>
                  <th scope="col">Uptime</th>
                  <th scope="col">Data center</th>
                </tr>
              </thead>
              <tbody>
                {pods.map((pod) => {
                  const up = uptimeOf(pod, now);
                  return (
                    <tr key={pod.id} data-pod={pod.id}>
                      <td>
                        <a href={`#/pods/${encodeURIComponent(pod.id)}`}>{pod.name}</a>
                      </td>
                      <td>
                        <StatusBadge status={pod.status} />
                      </td>
                      <td>{computeOf(pod)}</td>
                      <td>{money(pod.cost)}</td>
                      <td>{up === null ? '—' : duration(up)}</td>
                      <td>{pod.dataCenterId ?? '—'}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}
