/**
 * Test images for the Docker runtime, built without a registry: a root filesystem is assembled in
 * a temp folder (busybox-static for a shell, and for the Node images this machine's `node` binary
 * with the shared libraries `ldd` lists) and imported through the Engine API (`POST
 * /images/create?fromSrc=-`). An image is tagged with a hash of what went into it, so later runs
 * reuse it; images are kept (they are the cache), nothing else is touched.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  rmdirSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { DockerClient } from '../../src/runtime/docker/docker-client.js';

/** A file of this machine copied into the image at `to`. */
interface CopiedFile {
  from: string;
  to: string;
  mode?: number;
}

export interface ImageRecipe {
  /** `gantry-test/<name>:<hash>` */
  name: string;
  /** the Node binary and its libraries too */
  node?: boolean;
  files?: CopiedFile[];
  /** Dockerfile instructions applied at import: `ENTRYPOINT […]`, `CMD […]`, `ENV …` */
  changes: string[];
}

const BUSYBOX_APPLETS = [
  'sh',
  'sleep',
  'echo',
  'cat',
  'ls',
  'env',
  'kill',
  'ps',
  'mkdir',
  'rm',
  'true',
  'false',
  'wget',
  'id',
  'stty',
];
const fixture = (name: string): string => join(import.meta.dirname, '..', 'fixtures', name);

/** The http image's ENTRYPOINT: test/fixtures/http-server.mjs under the machine's node. */
export const HTTP_ENTRYPOINT = ['/usr/local/bin/node', '/app/http-server.mjs'];

/** The four images every Docker test can use. */
export const RECIPES = {
  /** Runs until stopped (and stops at once on SIGTERM). */
  idle: {
    name: 'idle',
    changes: [`CMD ["/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"]`],
  },
  /** Prints "boom" on stderr and exits with code 3. */
  crashing: { name: 'crashing', changes: ['CMD ["/bin/sh", "-c", "echo loading >&1; echo boom >&2; exit 3"]'] },
  /** test/fixtures/http-server.mjs on port 8000; args go to it. */
  http: {
    name: 'http',
    node: true,
    files: [{ from: fixture('http-server.mjs'), to: '/app/http-server.mjs' }],
    changes: [`ENTRYPOINT ["${HTTP_ENTRYPOINT.join('", "')}"]`],
  },
  /** Node with its libraries: `node <args>`, for worker images built on it. */
  node: { name: 'node', node: true, changes: ['ENTRYPOINT ["/usr/local/bin/node"]'] },
} satisfies Record<string, ImageRecipe>;

/** Builds (or finds, from an earlier run) the image of `recipe`; answers its reference. */
export async function buildImage(client: DockerClient, recipe: ImageRecipe): Promise<string> {
  const files = filesOf(recipe);
  const hash = createHash('sha256');
  hash.update(JSON.stringify({ changes: recipe.changes, v: 2 }));
  for (const file of files) {
    const st = statSync(file.from);
    // Big binaries by identity (hashing 100 MB of node each run costs more than it saves).
    hash.update(`${file.to}\0${file.mode ?? st.mode}\0`);
    hash.update(st.size > 1024 * 1024 ? `${file.from}\0${st.size}\0${st.mtimeMs}` : readFileSync(file.from));
  }
  const tag = hash.digest('hex').slice(0, 16);
  const ref = `gantry-test/${recipe.name}:${tag}`;
  if (await client.inspectImage(ref)) return ref;

  const lock = join(tmpdir(), `gantry-test-image-${recipe.name}-${tag}.lock`);
  // Another test file may be building it right now.
  if (!(await acquire(lock, () => client.inspectImage(ref).then(Boolean)))) return ref;
  try {
    if (await client.inspectImage(ref)) return ref;
    const root = mkdtempSync(join(tmpdir(), `gantry-rootfs-${recipe.name}-`));
    try {
      assemble(root, files);
      const tar = spawn('tar', ['-C', root, '-c', '--numeric-owner', '--owner=0', '--group=0', '.'], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      await client.importImage(tar.stdout, { repo: `gantry-test/${recipe.name}`, tag, changes: recipe.changes });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
    return ref;
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** Builds the four shared images (idle, crashing, http, node). */
export async function buildTestImages(client: DockerClient): Promise<Record<keyof typeof RECIPES, string>> {
  return {
    idle: await buildImage(client, RECIPES.idle),
    crashing: await buildImage(client, RECIPES.crashing),
    http: await buildImage(client, RECIPES.http),
    node: await buildImage(client, RECIPES.node),
  };
}

function filesOf(recipe: ImageRecipe): CopiedFile[] {
  const files: CopiedFile[] = [{ from: busybox(), to: '/bin/busybox', mode: 0o755 }];
  if (recipe.node) {
    files.push({ from: process.execPath, to: '/usr/local/bin/node', mode: 0o755 });
    for (const lib of sharedLibraries(process.execPath)) files.push({ from: lib, to: lib, mode: 0o755 });
  }
  return [...files, ...(recipe.files ?? [])];
}

function assemble(root: string, files: CopiedFile[]): void {
  for (const dir of ['bin', 'etc', 'proc', 'sys', 'dev', 'root', 'app'])
    mkdirSync(join(root, dir), { recursive: true });
  mkdirSync(join(root, 'tmp'), { mode: 0o1777 });
  chmodSync(join(root, 'tmp'), 0o1777);
  writeFileSync(join(root, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/sh\n');
  writeFileSync(join(root, 'etc', 'group'), 'root:x:0:\n');
  for (const file of files) {
    const to = join(root, file.to);
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(file.from, to);
    chmodSync(to, file.mode ?? 0o644);
  }
  for (const applet of BUSYBOX_APPLETS) symlinkSync('busybox', join(root, 'bin', applet));
}

/** A statically linked busybox (Debian's busybox-static). */
function busybox(): string {
  for (const path of ['/bin/busybox', '/usr/bin/busybox']) {
    try {
      if (statSync(path).isFile()) return path;
    } catch {
      // try the next
    }
  }
  throw new Error('the Docker tests build their images from a static busybox: install busybox-static');
}

/** The shared libraries `ldd` lists for `binary`, and its loader. */
function sharedLibraries(binary: string): string[] {
  const out = execFileSync('ldd', [binary], { encoding: 'utf8' });
  const libs = new Set<string>();
  for (const line of out.split('\n')) {
    const linked = /=>\s+(\/\S+)/.exec(line);
    const loader = /^\s*(\/\S+)\s+\(/.exec(line);
    const path = linked?.[1] ?? loader?.[1];
    if (path) libs.add(path);
  }
  return [...libs];
}

/**
 * A lock folder shared by concurrent test files; one that outlives a crashed holder expires.
 * Answers true once held, false when `done` says the work was done by another holder.
 */
async function acquire(lock: string, done: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    try {
      mkdirSync(lock);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (await done()) return false;
    try {
      if (Date.now() - statSync(lock).mtimeMs > 180_000) rmdirSync(lock);
    } catch {
      // released meanwhile
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${lock}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * The image with an SSH server the orchestrator tests run: Debian with openssh-server, whose
 * /start.sh makes host keys, installs PUBLIC_KEY and runs sshd (.ci/build-rootfs.sh builds and
 * imports it; root and the Debian mirror are needed, so it is not built here).
 */
export const SSHD_IMAGE = 'gantry-test/sshd:1';

/** Why the SSH server image cannot be used, or null when the engine has it; under CI=true its absence throws. */
export async function sshdImageMissing(client: DockerClient): Promise<string | null> {
  if (await client.inspectImage(SSHD_IMAGE)) return null;
  const reason = `the image ${SSHD_IMAGE} is not in the engine: build it with \`.ci/build-rootfs.sh --import\` (root, debootstrap and the Debian mirror needed; .ci/run does it)`;
  // CI builds it before the tests (.ci/run): there a missing one is a failure, never a quiet skip.
  if (process.env.CI === 'true') throw new Error(`CI=true: ${reason}`);
  return reason;
}
