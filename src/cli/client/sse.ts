/**
 * Server-Sent Events read from a fetch Response: one `{ id, data }` per event; comment lines
 * (`: keep-alive`) are skipped. With `quietMs`, the reading ends once no event arrived for that
 * long (a stream that follows forever, read only for what it holds now).
 */
export interface SseEvent {
  id: string | undefined;
  data: string;
}

export async function* sseEvents(res: Response, options: { quietMs?: number } = {}): AsyncGenerator<SseEvent> {
  if (!res.body) return;
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let id: string | undefined;
  let data: string[] = [];
  try {
    for (;;) {
      const chunk = await readWithin(reader, options.quietMs);
      if (chunk === 'quiet' || chunk.done) return;
      buffer += decoder.decode(chunk.value, { stream: true });
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl).replace(/\r$/, '');
        buffer = buffer.slice(nl + 1);
        if (line === '') {
          if (data.length > 0) yield { id, data: data.join('\n') };
          data = [];
          id = undefined;
        } else if (line.startsWith(':')) continue;
        else {
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'data') data.push(value);
          else if (field === 'id') id = value;
        }
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

type Chunk = Awaited<ReturnType<ReadableStreamDefaultReader<Uint8Array>['read']>>;

/** The next chunk, or `'quiet'` when none comes within `quietMs`. */
function readWithin(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  quietMs: number | undefined,
): Promise<Chunk | 'quiet'> {
  if (quietMs === undefined) return reader.read();
  let timer: NodeJS.Timeout | undefined;
  const quiet = new Promise<'quiet'>((resolve) => (timer = setTimeout(() => resolve('quiet'), quietMs)));
  return Promise.race([reader.read(), quiet]).finally(() => clearTimeout(timer));
}
