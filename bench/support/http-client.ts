// A lean keep-alive HTTP client for benchmarks (node:http): less client-side CPU per request than
// fetch, so that latencies and rates measure the server more than the client.
import { Agent, request } from 'node:http';

export interface HttpAnswer {
  status: number;
  body: string;
}

export interface HttpClient {
  send(method: string, path: string, body?: string): Promise<HttpAnswer>;
  /** `send`, then the body parsed as JSON. */
  json<T = unknown>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
  close(): void;
}

/** A client of `baseUrl` (http://host:port) sending `headers` with every request. */
export function httpClient(baseUrl: string, headers: Record<string, string> = {}, maxSockets = 256): HttpClient {
  const url = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets });
  const send = (method: string, path: string, body?: string): Promise<HttpAnswer> =>
    new Promise((resolve, reject) => {
      const req = request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          method,
          path,
          headers:
            body === undefined
              ? headers
              : { 'content-type': 'application/json', ...headers, 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  return {
    send,
    async json<T>(method: string, path: string, body?: unknown) {
      const r = await send(method, path, body === undefined ? undefined : JSON.stringify(body));
      return { status: r.status, body: (r.body ? JSON.parse(r.body) : undefined) as T };
    },
    close: () => agent.destroy(),
  };
}
