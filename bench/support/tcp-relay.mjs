// The floor any relay pays: bytes joined from a client connection to one of the upstream's, with
// no HTTP at all (no parsing, no headers, no routing). Beside the direct connection it says how
// much of the pod proxy's cost is the extra hop itself on this machine.
//   node bench/support/tcp-relay.mjs <upstream port>
// Prints `relay listening on http://127.0.0.1:<port>/`.
import { connect, createServer } from 'node:net';

const upstreamPort = Number(process.argv[2]);
const server = createServer((client) => {
  const upstream = connect({ host: '127.0.0.1', port: upstreamPort, noDelay: true });
  client.setNoDelay(true);
  client.pipe(upstream);
  upstream.pipe(client);
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
});
server.listen(0, '127.0.0.1', () => {
  console.log(`relay listening on http://127.0.0.1:${server.address().port}/`);
});
process.on('SIGTERM', () => process.exit(0));
