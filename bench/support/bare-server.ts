// The peer every HTTP benchmark compares against: a bare Fastify server with constant routes,
// no auth, no store, no validation. Each answer is the size of the Gantry answer it stands in for
// (a pod for the pod routes, a queued job's `{id, status}` for `/run`), so the two servers put the
// same bytes on the wire and the ratio measures the work behind the route.
// Prints its URL on stdout.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
const constant = {
  id: 'hzicbwptyblmec',
  name: 'bench',
  status: 'RUNNING',
  actions: ['stop', 'restart', 'terminate'],
  image: 'ubuntu:22.04',
  args: '',
  disk: 20,
  mounts: {},
  ports: ['8888/http'],
  env: {},
  registry: null,
  cloud: 'SECURE',
  dataCenterId: 'US-TX-3',
  cudaVersion: '12.4',
  ssh: { proxy: null, direct: null },
  template: null,
  cost: 0.69,
  locked: false,
  globalNetworking: { enabled: false },
  runtime: {
    uptime: 5,
    gpus: [{ util: 0, memoryUtil: 0 }],
    cpu: { util: 0 },
    memory: { util: 0 },
    ports: [{ private: 8888, public: 20000, type: 'http', ip: '127.0.0.1' }],
  },
  createdAt: '2026-11-22T04:13:18.945Z',
  startedAt: '2026-11-22T04:13:19.141Z',
  statusReason: null,
  gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 },
};
app.get('/bare/:id', async () => constant);
app.post('/bare', async (_request, reply) => reply.code(201).send(constant));
// what POST /v2/{id}/run answers: a 34-character job id and IN_QUEUE
const queued = { id: 'mhzq3k1c-4f0d9a2b7c1e5f8a3d6b9c2e1', status: 'IN_QUEUE' };
app.post('/bare/run', async () => queued);
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
process.stdout.write(
  `bare listening on http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}\n`,
);
// a clean exit on SIGTERM, so `--cpu-prof` (bench --profile) writes its profile
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
