import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { rootCertificates } from 'node:tls';

/**
 * The worker's HTTP client: node:http over keep-alive agents. A worker makes one request per job
 * result plus its takes, pings and job-stop polls; `fetch` costs several times more CPU per
 * request than node:http, which is CPU a handler does not get.
 */
export interface CallResponse {
  status: number;
  ok: boolean;
  text(): Promise<string>;
  json(): Promise<unknown>;
  /** Reads (and discards) the body; the connection goes back to the pool. */
  arrayBuffer(): Promise<ArrayBuffer>;
}

export interface CallInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Aborts the request (a long-poll when the worker stops). */
  signal?: AbortSignal;
}

export interface HttpCaller {
  call(url: string, init?: CallInit): Promise<CallResponse>;
  /** Closes pooled connections. */
  close(): void;
}

const abortError = (reason: unknown): Error => {
  const err = new Error(reason instanceof Error ? reason.message : 'The request was aborted');
  err.name = 'AbortError';
  return err;
};

/**
 * The authorities an https job URL's certificate is checked against: the system's (Node's roots
 * and `NODE_EXTRA_CA_CERTS`, Node's default) and, when `GANTRY_CA_FILE` names a PEM file, its
 * certificates besides them. A file that cannot be read fails the worker's start, saying so.
 */
function workerCas(env: NodeJS.ProcessEnv = process.env): string[] | undefined {
  const file = env.GANTRY_CA_FILE;
  if (!file) return undefined;
  const pem = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
  const read = (path: string, label: string): string[] => {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new Error(`${label} ${path} cannot be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, {
        cause: err,
      });
    }
    const blocks = text.match(pem);
    if (!blocks) throw new Error(`${label} ${path} holds no PEM certificate`);
    return blocks;
  };
  const nodeExtra = env.NODE_EXTRA_CA_CERTS;
  const extra = nodeExtra
    ? (() => {
        try {
          return read(nodeExtra, 'NODE_EXTRA_CA_CERTS');
        } catch {
          return [];
        }
      })()
    : [];
  return [...rootCertificates, ...extra, ...read(file, 'GANTRY_CA_FILE')];
}

export function httpCaller(env: NodeJS.ProcessEnv = process.env): HttpCaller {
  const ca = workerCas(env);
  const agents = {
    http: new http.Agent({ keepAlive: true }),
    https: new https.Agent({ keepAlive: true, ...(ca ? { ca } : {}) }),
  };
  return {
    call(url, init = {}) {
      return new Promise<CallResponse>((resolve, reject) => {
        const signal = init.signal;
        if (signal?.aborted) return reject(abortError(signal.reason));
        const target = new URL(url);
        const secure = target.protocol === 'https:';
        const headers: Record<string, string | number> = { ...init.headers };
        if (init.body !== undefined) headers['content-length'] = Buffer.byteLength(init.body);
        const req = (secure ? https : http).request(target, {
          method: init.method ?? 'GET',
          headers,
          agent: secure ? agents.https : agents.http,
        });
        const onAbort = (): void => void req.destroy(abortError(signal?.reason));
        signal?.addEventListener('abort', onAbort, { once: true });
        const done = (): void => signal?.removeEventListener('abort', onAbort);
        req.once('error', (err) => {
          done();
          reject(err);
        });
        req.once('response', (res) => {
          const chunks: Buffer[] = [];
          const body = new Promise<Buffer>((ok, fail) => {
            res.on('data', (c: Buffer) => chunks.push(c));
            res.once('end', () => {
              done();
              ok(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
            });
            res.once('error', (err) => {
              done();
              fail(err);
            });
            res.once('close', () => {
              if (!res.complete) fail(abortError('the connection closed before the body ended'));
            });
          });
          body.catch(() => undefined); // read or not, a failed body must not be an unhandled rejection
          const status = res.statusCode ?? 0;
          resolve({
            status,
            ok: status >= 200 && status < 300,
            text: async () => (await body).toString('utf8'),
            json: async () => JSON.parse((await body).toString('utf8')) as unknown,
            arrayBuffer: async () => {
              const b = await body;
              return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
            },
          });
        });
        req.end(init.body);
      });
    },
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
