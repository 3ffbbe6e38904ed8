import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

interface ReceivedCall {
  path: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>` */
  url: string;
  calls: ReceivedCall[];
  /** Statuses to answer, in order; once used up, `fallback`. */
  script: number[];
  /** @default 200 */
  fallback: number;
  /** When true, requests are held open and never answered. */
  hang: boolean;
  close(): Promise<void>;
}

/** A real HTTP receiver on a loopback port, answering the statuses it is scripted with. */
export async function startReceiver(): Promise<WebhookReceiver> {
  const held = new Set<import('node:http').ServerResponse>();
  const receiver: WebhookReceiver = {
    url: '',
    calls: [],
    script: [],
    fallback: 200,
    hang: false,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of held) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // keep the text
      }
      receiver.calls.push({ path: req.url ?? '', headers: req.headers, body });
      if (receiver.hang) {
        held.add(res);
        return;
      }
      const status = receiver.script.shift() ?? receiver.fallback;
      res.statusCode = status;
      if (status >= 300 && status < 400) res.setHeader('location', `${receiver.url}/elsewhere`);
      res.end(status === 204 ? undefined : 'ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}
