// The floors any pod proxy pays, for bench/proxy.ts, each in its own process:
// - `tcp`: bytes joined from a client connection to one of the upstream's, with no HTTP at all
//   (no parsing, no headers, no routing): what the extra hop alone costs on this machine;
// - `http`: the smallest HTTP proxy Node's own modules make (its server, a keep-alive agent,
//   bodies piped; no routing, limits, header rewriting or timeouts): what parsing HTTP adds.
//   node bench/support/tcp-relay.mjs tcp|http <upstream port>
// Prints `relay listening on http://127.0.0.1:<port>/`.
import { Agent, createServer as createHttpServer, request } from 'node:http';
import { connect, createServer } from 'node:net';

const [mode, port] = process.argv.slice(2);
const upstreamPort = Number(port);

function tcpRelay() {
  return createServer((client) => {
    const upstream = connect({ host: '127.0.0.1', port: upstreamPort, noDelay: true });
    client.setNoDelay(true);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
}

function httpRelay() {
  const agent = new Agent({ keepAlive: true, maxFreeSockets: 32 });
  return createHttpServer((req, res) => {
    const upstream = request(
      { agent, host: '127.0.0.1', port: upstreamPort, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
}

const server = mode === 'http' ? httpRelay() : tcpRelay();
server.listen(0, '127.0.0.1', () => {
  console.log(`relay listening on http://127.0.0.1:${server.address().port}/`);
});
process.on('SIGTERM', () => process.exit(0));
