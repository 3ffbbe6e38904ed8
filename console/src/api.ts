/**
 * The console's only way to the server: the public API, with the key in `Authorization: Bearer`.
 * The key lives in this tab's sessionStorage (gone when the tab closes, never in a URL, a cookie or
 * a log line); nothing here prints it.
 */

const STORAGE_KEY = 'gantry.apiKey';

export const storedKey = (): string | null => sessionStorage.getItem(STORAGE_KEY);
export const storeKey = (key: string): void => sessionStorage.setItem(STORAGE_KEY, key);
export const forgetKey = (): void => sessionStorage.removeItem(STORAGE_KEY);

/** An `application/problem+json` answer (docs/errors.md), or a failure to reach the server. */
export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly errors: readonly string[] = [],
  ) {
    super(detail);
    this.name = 'ApiProblem';
  }
}

/**
 * Called when the server refuses the key (revoked, unknown): the app signs out. A refusal of a call
 * started at boot, before the app set its handler, is kept and handed to the handler when it is set.
 */
let refusedBeforeHandler = false;
let onUnauthorized: () => void = () => {
  refusedBeforeHandler = true;
};
export const whenUnauthorized = (fn: () => void): void => {
  onUnauthorized = fn;
  if (refusedBeforeHandler) {
    refusedBeforeHandler = false;
    fn();
  }
};

const authHeaders = (key: string | null = storedKey()): Record<string, string> =>
  key === null ? {} : { authorization: `Bearer ${key}` };

async function problemOf(res: Response): Promise<ApiProblem> {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    // not JSON: a proxy's page
  }
  const p = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const errors = Array.isArray(p.errors) ? p.errors.filter((e): e is string => typeof e === 'string') : [];
  return new ApiProblem(
    res.status,
    typeof p.code === 'string' ? p.code : `HTTP_${res.status}`,
    typeof p.detail === 'string' ? p.detail : `${res.status} ${res.statusText}`,
    errors,
  );
}

/** One API call's answer when it succeeded; throws an ApiProblem otherwise. */
async function send(method: string, path: string, body?: unknown, key?: string): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers: {
        ...authHeaders(key),
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      cache: 'no-store',
    });
  } catch {
    throw new ApiProblem(0, 'NETWORK', 'The server cannot be reached.');
  }
  if (!res.ok) {
    const problem = await problemOf(res);
    if (res.status === 401 && key === undefined) onUnauthorized();
    throw problem;
  }
  return res;
}

/** One API call; answers the parsed JSON (or null for 204), throws an ApiProblem otherwise. */
export async function api<T>(method: string, path: string, body?: unknown, key?: string): Promise<T> {
  const res = await send(method, path, body, key);
  if (res.status === 204) return null as T;
  return (await res.json()) as T;
}

/** A GET whose answer carries figures in its headers too (a page of a list: `X-Total-Count`). */
export async function getWithHeaders<T>(path: string): Promise<{ body: T; headers: Headers }> {
  const res = await send('GET', path);
  return { body: (await res.json()) as T, headers: res.headers };
}

/**
 * A problem's messages by the request field they concern. The API lists violations as
 * `<path>: <message>` (`ports.0: must match pattern …`, `disk: must be >= 1`); a field collects the
 * messages of its own path and of every path below it.
 */
export function fieldErrors(
  problem: ApiProblem,
  fields: readonly string[],
): { byField: Record<string, string>; rest: string[] } {
  const byField: Record<string, string> = {};
  const rest: string[] = [];
  for (const entry of problem.errors) {
    const m = /^([A-Za-z0-9_.[\]/-]+): (.*)$/s.exec(entry);
    const top = m ? m[1]!.split(/[./[]/)[0]! : '';
    const field = fields.includes(top) ? top : null;
    if (field === null) rest.push(entry);
    else byField[field] = byField[field] ? `${byField[field]}; ${entry}` : entry;
  }
  if (problem.errors.length === 0) {
    // A single-field refusal names its field in quotes ("allowedCudaVersions" applies to …).
    const named = fields.find((f) => problem.detail.includes(`"${f}"`));
    if (named !== undefined) byField[named] = problem.detail;
    else rest.push(problem.detail);
  }
  return { byField, rest };
}

export interface SseEvent {
  id: string | null;
  data: string;
}

/**
 * Reads a Server-Sent Events stream with the key in a header (EventSource cannot send one, and the
 * key must not go in the URL). Calls `onEvent` for each event until the stream ends or `signal`
 * aborts; resolves when it ends, rejects with an ApiProblem when the server refuses it.
 */
export async function readEvents(
  path: string,
  onEvent: (e: SseEvent) => void,
  signal: AbortSignal,
  lastEventId: string | null = null,
): Promise<void> {
  const res = await fetch(path, {
    headers: {
      ...authHeaders(),
      accept: 'text/event-stream',
      ...(lastEventId === null ? {} : { 'last-event-id': lastEventId }),
    },
    signal,
    cache: 'no-store',
  });
  if (!res.ok) throw await problemOf(res);
  if (res.body === null) return;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let id: string | null = null;
  let data: string[] = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, '');
      buffer = buffer.slice(nl + 1);
      if (line === '') {
        if (data.length > 0) onEvent({ id, data: data.join('\n') });
        data = [];
        id = null;
      } else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      else if (line.startsWith('id:')) id = line.slice(3).trim();
      // comments (`: keep-alive`) and other fields are skipped
    }
  }
}

export interface Account {
  id: string;
  name: string;
  key: { id: string; scope: 'read' | 'write' };
}

const early = new Map<string, Promise<unknown>>();

/**
 * Starts a call now, before the page that reads it has mounted (at boot, before the first render
 * and beside the key check), so that the calls overlap instead of following each other. The page
 * takes it once with `takeEarly`; later calls go to the server as usual.
 */
export function startEarly(path: string, load: () => Promise<unknown> = () => api<unknown>('GET', path)): void {
  const call = load();
  // the page that takes it sees the problem; one that fails before it is taken is dropped, so the
  // page makes its own call (after a refused key and a new sign-in, say)
  call.catch(() => {
    if (early.get(path) === call) early.delete(path);
  });
  early.set(path, call);
}

/** The early call for `path`, once, if there is one; else `load()` (by default a fresh GET). */
export function takeEarly<T>(path: string, load: () => Promise<T> = () => api<T>('GET', path)): Promise<T> {
  const call = early.get(path);
  early.delete(path);
  return (call as Promise<T> | undefined) ?? load();
}
