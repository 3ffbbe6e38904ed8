// A worker image on the real Python worker SDK (runpod-python), for bench/flashboot.ts
// `--python-sdk DIR`. DIR is a directory from which `import runpod.serverless` works (the SDK's
// package and its dependencies, as `pip install --target DIR` leaves them; compile it first,
// `python3 -m compileall DIR`, or every fresh container compiles it again). The image holds this
// machine's Python interpreter (the prefix `sys.prefix` names, without its tests, Tk, IDLE and
// site-packages), the shared libraries its binary and every extension module link to (as `ldd`
// lists them), DIR at /app/site, and a handler answering the bench's `WorkerTimes`:
// `processStartedAt` when the interpreter began the handler, `readyAt` once the SDK was imported,
// `takenAt` when the handler ran. No registry and no Dockerfile: the root filesystem is assembled
// in `scratch` and imported through the Engine API, tagged with a hash of its inputs.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { DockerClient } from '../../src/runtime/docker/docker-client.js';

const HANDLER = `import time
STARTED = time.time() * 1000
import runpod
READY = time.time() * 1000


def handler(job):
    return {
        "echo": job["input"],
        "takenAt": int(time.time() * 1000),
        "processStartedAt": int(STARTED),
        "readyAt": int(READY),
    }


runpod.serverless.start({"handler": handler})
`;

/** Why DIR cannot serve (a message), or null: the SDK imports from it with this machine's python3. */
export function pythonSdkProblem(dir: string): string | null {
  try {
    execFileSync('python3', ['-c', 'import runpod.serverless'], {
      env: { ...process.env, PYTHONPATH: dir, RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: 'true' },
      stdio: 'pipe',
      timeout: 60_000,
    });
    return null;
  } catch (err) {
    const text = String((err as { stderr?: Buffer }).stderr ?? (err as Error).message).trim();
    return text.split('\n').slice(-1)[0] ?? text;
  }
}

/** Every file under `dir` whose name ends with `.so` or contains `.so.`. */
function sharedObjects(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = statSync(path, { throwIfNoEntry: false });
    if (!st) continue;
    if (st.isDirectory()) out.push(...sharedObjects(path));
    else if (/\.so(\.|$)/.test(name)) out.push(path);
  }
  return out;
}

/** The libraries `ldd` resolves for `file`, outside `inside` (those come with the tree itself). */
function libraries(file: string, inside: string[]): string[] {
  let text: string;
  try {
    text = execFileSync('ldd', [file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return []; // not dynamic
  }
  return [...text.matchAll(/(\/[^\s)]+)/g)]
    .map((m) => m[1]!)
    .filter((p) => !inside.some((root) => p.startsWith(`${root}/`)));
}

/** Builds (or finds) the image; answers its reference. */
export async function buildPythonSdkImage(client: DockerClient, sdkDir: string, scratch: string): Promise<string> {
  const [prefix, version] = execFileSync(
    'python3',
    ['-c', 'import sys; print(sys.prefix); print(f"{sys.version_info[0]}.{sys.version_info[1]}")'],
    { encoding: 'utf8' },
  )
    .trim()
    .split('\n') as [string, string];
  const binary = join(prefix, 'bin', `python${version}`);
  const hash = createHash('sha256')
    .update(HANDLER)
    .update(`${binary}\0${statSync(binary).mtimeMs}\0${sdkDir}\0${statSync(sdkDir).mtimeMs}`)
    .digest('hex')
    .slice(0, 16);
  const ref = `gantry-bench/python-sdk-worker:${hash}`;
  if (await client.inspectImage(ref)) return ref;

  const root = join(scratch, 'python-rootfs');
  const stdlib = join(prefix, 'lib', `python${version}`);
  const skip = new Set(['site-packages', 'test', 'idlelib', 'tkinter', 'turtledemo', 'ensurepip']);
  mkdirSync(join(root, stdlib), { recursive: true });
  for (const name of readdirSync(stdlib))
    if (!skip.has(name))
      cpSync(join(stdlib, name), join(root, stdlib, name), { recursive: true, preserveTimestamps: true });
  const copy = (file: string) => {
    mkdirSync(join(root, dirname(file)), { recursive: true });
    cpSync(file, join(root, file), { dereference: true });
  };
  copy(binary);
  for (const name of readdirSync(join(prefix, 'lib')))
    if (name.startsWith('libpython')) copy(join(prefix, 'lib', name));
  const libs = new Set<string>();
  for (const file of [binary, ...sharedObjects(join(stdlib, 'lib-dynload')), ...sharedObjects(sdkDir)])
    for (const lib of libraries(file, [prefix, sdkDir])) libs.add(lib);
  for (const lib of libs) copy(lib);
  // (times kept: the compiled files are checked against their sources' times)
  cpSync(sdkDir, join(root, 'app', 'site'), { recursive: true, dereference: true, preserveTimestamps: true });
  writeFileSync(join(root, 'app', 'handler.py'), HANDLER);
  mkdirSync(join(root, 'tmp'), { recursive: true });
  const tar = spawn('tar', ['-C', root, '-c', '--numeric-owner', '--owner=0', '--group=0', '.'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [repo, tag] = ref.split(':') as [string, string];
  await client.importImage(tar.stdout, {
    repo,
    tag,
    changes: [
      'ENV PYTHONPATH=/app/site PYTHONUNBUFFERED=1 RUNPOD_SKIP_AUTO_SYSTEM_CHECKS=true',
      `ENTRYPOINT ["${binary}", "/app/handler.py"]`,
    ],
  });
  return ref;
}
