/**
 * A whole Gantry server (process runtime) with its SSH proxy on a free port, and what the SSH tests
 * need around it: accounts with registered keys (real ed25519 keys from ssh-keygen) and pods of an
 * image that runs a real process.
 */
import type { Clock } from '../../src/domain/clock.js';
import { eventually } from './eventually.js';
import { startListeningServer, type ListeningServer } from './harness.js';
import { newKeyPair, type KeyPair } from './openssh.js';

const SLEEPER = 'test/sleeper';
const GPU = 'NVIDIA GeForce RTX 4090';

export interface SshTenant {
  accountId: string;
  key: string;
  sshKey: KeyPair;
}

export interface SshPod {
  id: string;
  status: string;
  ssh: {
    proxy: { host: string; port: number; username: string; command: string } | null;
    direct: { host: string; port: number; username: string; command: string } | null;
  };
  [field: string]: unknown;
}

/** What the fixture's API calls go through: `fetch`, or a client of the test's (one trusting its CA). */
export type FixtureFetch = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string },
) => Promise<{ status: number; text(): Promise<string> }>;

export interface SshFixture {
  server: ListeningServer;
  url: string;
  sshPort: number;
  tenant(name: string): Promise<SshTenant>;
  call(key: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** Creates a pod and waits until it is RUNNING. */
  runningPod(owner: SshTenant, body?: Record<string, unknown>): Promise<SshPod>;
  podUntil(owner: SshTenant, id: string, done: (p: SshPod) => boolean): Promise<SshPod>;
  close(): Promise<void>;
}

export async function startSshFixture(
  file: Record<string, unknown> = {},
  options: { clock?: Clock; fetch?: FixtureFetch } = {},
): Promise<SshFixture> {
  const { ssh, ...rest } = file as { ssh?: Record<string, unknown> };
  const server = await startListeningServer(
    {
      images: { [SLEEPER]: { command: ['sleep', '600'] } },
      pods: { reconcileIntervalMs: 100, stopGraceMs: 1000 },
      ...rest,
      ssh: { port: 0, ...ssh },
    },
    options,
  );
  const running = server.server;
  if (!running.ssh) throw new Error('the SSH proxy did not start');
  const url = running.url;
  const call: SshFixture['call'] = async (key, method, path, body) => {
    const res = await (options.fetch ?? fetch)(`${url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const podUntil: SshFixture['podUntil'] = (owner, id, done) => {
    let last: SshPod | null = null;
    return eventually(
      () => `pod ${id}: ${JSON.stringify(last && { status: last.status, statusReason: last.statusReason })}`,
      async () => {
        last = (await call(owner.key, 'GET', `/v2/pods/${id}`)).body as SshPod;
        return done(last) ? last : null;
      },
      20_000,
    );
  };
  return {
    server,
    url,
    sshPort: running.services.config.ssh.port,
    async tenant(name) {
      const account = await running.services.accounts.createAccount(
        `${name}-${Math.random().toString(36).slice(2, 8)}`,
      );
      const { key } = await running.services.accounts.createKey(account.id, { scope: 'write' });
      const sshKey = newKeyPair(name);
      const put = await call(key, 'PUT', '/v2/account/ssh-keys', [sshKey.publicKey]);
      if (put.status !== 200) throw new Error(`PUT ssh-keys: ${put.status} ${JSON.stringify(put.body)}`);
      return { accountId: account.id, key, sshKey };
    },
    call,
    async runningPod(owner, body = {}) {
      const created = await call(owner.key, 'POST', '/v2/pods', {
        name: 'ssh',
        image: SLEEPER,
        gpu: { id: GPU },
        startSsh: true,
        ...body,
      });
      if (created.status !== 201) throw new Error(`POST /v2/pods: ${created.status} ${JSON.stringify(created.body)}`);
      return podUntil(owner, created.body.id, (p) => p.status === 'RUNNING');
    },
    podUntil,
    close: () => server.close(),
  };
}
