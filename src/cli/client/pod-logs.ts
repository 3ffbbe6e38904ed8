/**
 * `gantry pods logs`: reads the pod's log stream (GET /v2/pods/{id}/logs, Server-Sent Events,
 * docs/logs.md). With --follow it prints until the stream ends (the pod stops) or the user
 * interrupts; without, it prints the kept lines and ends once the stream is quiet for a second
 * (the stream itself follows a running pod forever).
 */
import type { ApiClient } from './http.js';
import type { Output } from './output.js';
import { sseEvents } from './sse.js';

/** How long a stream read without --follow may stay quiet before the CLI takes it as read. */
const QUIET_MS = 1000;

export interface LogOptions {
  follow: boolean;
  tail?: number | undefined;
  since?: string | undefined;
  source?: string | undefined;
  timestamps: boolean;
}

interface LogLine {
  ts: string;
  source: string;
  line: string;
}

export async function printPodLogs(api: ApiClient, id: string, out: Output, options: LogOptions): Promise<void> {
  const res = await api.check(
    await api.fetch('GET', `/v2/pods/${encodeURIComponent(id)}/logs`, {
      query: { tail: options.tail, since: options.since, source: options.source },
      headers: { accept: 'text/event-stream' },
      timeoutMs: 0,
    }),
  );
  for await (const event of sseEvents(res, options.follow ? {} : { quietMs: QUIET_MS })) {
    const line = JSON.parse(event.data) as LogLine;
    if (out.json) out.record(line);
    else
      out.text(`${options.timestamps ? `${line.ts} ` : ''}${line.source === 'system' ? '[gantry] ' : ''}${line.line}`);
  }
}
