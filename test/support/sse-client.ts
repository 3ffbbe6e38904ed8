/**
 * A Server-Sent Events reader over fetch, for tests of streaming routes: it reads events until a
 * predicate holds or the server ends the stream, then leaves.
 */
export interface SseEvent {
  id: string | null;
  data: string;
}

export interface SseRead {
  status: number;
  headers: Headers;
  events: SseEvent[];
  comments: string[];
  /** the server ended the stream (rather than the reader leaving) */
  ended: boolean;
  /** the body of a non-200 answer */
  body: string;
}

export interface SseOptions {
  headers?: Record<string, string>;
  /** Leave once this holds. @default never: read until the stream ends */
  until?: (events: SseEvent[], comments: string[]) => boolean;
  /** Called once the stream is open (headers received), to make something happen while reading. */
  onOpen?: () => Promise<void> | void;
  /** Give up (and fail) after this long. @default 15000 */
  timeoutMs?: number;
}

export async function readSse(url: string, options: SseOptions = {}): Promise<SseRead> {
  const abort = new AbortController();
  const timer = setTimeout(
    () => abort.abort(new Error(`no end to the stream of ${url} within ${options.timeoutMs ?? 15_000} ms`)),
    options.timeoutMs ?? 15_000,
  );
  try {
    const res = await fetch(url, { headers: options.headers ?? {}, signal: abort.signal });
    const out: SseRead = { status: res.status, headers: res.headers, events: [], comments: [], ended: false, body: '' };
    if (res.status !== 200 || !res.body) {
      out.body = await res.text();
      return out;
    }
    const opened = Promise.resolve(options.onOpen?.());
    const decoder = new TextDecoder();
    let buffer = '';
    const reader = res.body.getReader();
    let done = false;
    while (!done) {
      if (options.until?.(out.events, out.comments)) break;
      const chunk = await reader.read();
      if (chunk.done) {
        out.ended = true;
        break;
      }
      buffer += decoder.decode(chunk.value, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let id: string | null = null;
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) out.comments.push(line.slice(1).trim());
          else if (line.startsWith('id: ')) id = line.slice(4);
          else if (line.startsWith('data: ')) data.push(line.slice(6));
        }
        if (data.length > 0) out.events.push({ id, data: data.join('\n') });
        if (options.until?.(out.events, out.comments)) {
          done = true;
          break;
        }
      }
    }
    await opened;
    await reader.cancel().catch(() => undefined);
    return out;
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}
