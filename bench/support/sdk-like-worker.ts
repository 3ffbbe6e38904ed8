// A worker of bench/runsync-latency.ts's deployed shape that speaks like the Python SDK
// (runpod-python's job loop) minus its sleeps: `fetch`, a new take as soon as the last result is
// posted, results posted as JSON text under `application/x-www-form-urlencoded` (the SDK's
// content type), `job_in_progress` and `isStream` query flags, a heartbeat on RUNPOD_PING_INTERVAL.
// The SDK itself idles 100 ms between queue checks and 1 s when its worker is full
// (docs/performance.md); this worker measures the platform's share. Echoes `input.i`, its CPU
// time (`cpuUs`) and `at`: when it got the job (performance.timeOrigin + now(), comparable across processes).
const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const env = process.env;
const workerId = env.RUNPOD_POD_ID!;
const takeUrl = env.RUNPOD_WEBHOOK_GET_JOB!.replaceAll('$ID', workerId);
const doneUrl = (jobId: string) =>
  env.RUNPOD_WEBHOOK_POST_OUTPUT!.replaceAll('$RUNPOD_POD_ID', workerId).replaceAll('$ID', jobId);
const pingUrl = env.RUNPOD_WEBHOOK_PING!.replaceAll('$RUNPOD_POD_ID', workerId);
const auth = { authorization: env.RUNPOD_AI_API_KEY! };
let stopping = false;
process.once('SIGTERM', () => {
  stopping = true;
  process.exit(0);
});

setInterval(
  () =>
    void fetch(`${pingUrl}?job_id=`, { headers: auth })
      .then((r) => r.arrayBuffer())
      .catch(() => undefined),
  Number(env.RUNPOD_PING_INTERVAL ?? 10_000),
).unref();

interface Job {
  id: string;
  input: { i: number };
}
const take = async (): Promise<Job | null> => {
  const res = await fetch(`${takeUrl}&job_in_progress=0`, { headers: auth });
  if (res.status === 200) return (await res.json()) as Job;
  await res.arrayBuffer();
  return null;
};

while (!stopping) {
  let job: Job | null;
  try {
    job = await take();
  } catch {
    await new Promise((r) => setTimeout(r, 1000));
    continue;
  }
  if (!job) continue;
  const at = performance.timeOrigin + performance.now();
  const res = await fetch(`${doneUrl(job.id)}&isStream=false`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded', charset: 'utf-8' },
    body: JSON.stringify({ output: { echoed: job.input.i, at, cpuUs: cpu() } }),
  });
  await res.arrayBuffer();
}
