/**
 * `--wait` on a pod: polls GET /v2/pods/{id} and shows each status change, and meanwhile follows
 * the pod's system log lines (placed on host, pulling and starting the image, ready) as progress,
 * until RUNNING (answers the pod), a status it will not leave by itself (EXITED, ERROR,
 * TERMINATED: exit 1), or the timeout (exit 5).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { CliError, EXIT } from './exit-codes.js';
import type { ApiClient } from './http.js';
import type { Output } from './output.js';
import type { Pod } from './pod-view.js';
import { sseEvents } from './sse.js';

const POLL_MS = 500;
const FAILED = new Set(['EXITED', 'ERROR', 'TERMINATED']);

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

async function followSystemLines(api: ApiClient, id: string, out: Output, since: string, signal: AbortSignal) {
  try {
    const res = await api.fetch('GET', `/v2/pods/${encodeURIComponent(id)}/logs`, {
      query: { source: 'system', since },
      headers: { accept: 'text/event-stream' },
      timeoutMs: 0,
      signal,
    });
    if (!res.ok) return void (await res.body?.cancel());
    for await (const event of sseEvents(res)) {
      const line = (JSON.parse(event.data) as { line?: unknown }).line;
      if (typeof line === 'string') out.progress(`  ${line}`);
    }
  } catch {
    // progress only: the status poll decides
  }
}

export async function waitForPod(
  api: ApiClient,
  first: Pod,
  out: Output,
  options: { timeoutMs: number; since?: string },
): Promise<Pod> {
  const started = Date.now();
  const stop = new AbortController();
  const follower = followSystemLines(api, first.id, out, options.since ?? first.createdAt, stop.signal);
  let pod = first;
  let last = '';
  try {
    for (;;) {
      if (pod.status !== last) {
        out.progress(`${pod.id}  ${pod.status}  ${seconds(Date.now() - started)}`);
        last = pod.status;
      }
      if (pod.status === 'RUNNING') return pod;
      if (FAILED.has(pod.status))
        throw new CliError(
          EXIT.error,
          `pod ${pod.id} is ${pod.status}${pod.statusReason ? `: ${pod.statusReason}` : ''} (gantry pods logs ${pod.id})`,
        );
      if (Date.now() - started >= options.timeoutMs)
        throw new CliError(
          EXIT.timedOut,
          `pod ${pod.id} is still ${pod.status} after ${seconds(options.timeoutMs)} (gantry pods get ${pod.id})`,
        );
      await sleep(Math.min(POLL_MS, Math.max(0, options.timeoutMs - (Date.now() - started))));
      pod = await api.get<Pod>(`/v2/pods/${encodeURIComponent(pod.id)}`);
    }
  } finally {
    stop.abort();
    await follower;
  }
}
