// The peer every HTTP benchmark compares against: a bare Fastify server with constant routes,
// no auth, no store. Prints its URL on stdout.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
const constant = { id: 'abcdefghijklmn', name: 'bench', status: 'RUNNING', image: 'ubuntu:22.04', ports: ['8888/http'], env: {} };
app.get('/bare/:id', async () => constant);
app.post('/bare', async (_request, reply) => reply.code(201).send(constant));
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
process.stdout.write(`bare listening on http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}\n`);
