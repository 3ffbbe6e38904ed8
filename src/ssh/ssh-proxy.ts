/**
 * The SSH proxy (spec 2.6 `ssh.proxy`): an SSH server inside Gantry. The username routes to a pod
 * (its token), the account's registered public keys authenticate (ssh-authorizer.ts), and each
 * session is an interactive shell inside the pod (ssh-session.ts). Port forwarding of either
 * direction is refused. Connections are bounded in time: a client that does not authenticate
 * within the login grace, a session quiet for `idleTimeoutMs`, and a connection that stops
 * answering keepalives are closed, as are the sessions of a pod that stops.
 */
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import ssh2, { type AuthContext, type Connection, type Server, type ServerChannel } from 'ssh2';
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import type { Runtime, ShellSession } from '../runtime/runtime.js';
import type { SshAuthorizer, SshTarget } from './ssh-authorizer.js';
import { serveSession } from './ssh-session.js';

export interface SshProxyDeps {
  /** The `ssh` section's timings (docs/configuration.md). */
  config: { idleTimeoutMs: number; keepaliveIntervalMs: number; keepaliveCountMax: number };
  /** the private host key, OpenSSH format */
  hostKey: string;
  authorizer: Pick<SshAuthorizer, 'authorize'>;
  runtime: Pick<Runtime, 'shell'>;
  clock: Clock;
  logger: Logger;
  /** How often idle sessions are looked for. @default min(idleTimeoutMs / 2, 5000) */
  idleCheckMs?: number;
  /** A connection that has not authenticated after this long is closed. @default 30000 */
  loginGraceMs?: number;
}

/** Authentication attempts one connection may make (OpenSSH's MaxAuthTries is 6; its client tries each key it has). */
const MAX_AUTH_ATTEMPTS = 10;
/** Sessions one connection may have open at once (a multiplexing client opens several). */
const MAX_SESSIONS = 10;

interface Held {
  client: Connection;
  target: SshTarget | null;
  lastActivity: number;
  shells: Map<ShellSession, ServerChannel>;
  /** the proxy is ending it */
  ending: boolean;
}

/** An authentication request's outcome: refused, a key the client may go on to sign with, or signed and good. */
type Decision = { kind: 'refused' } | { kind: 'key-ok' } | { kind: 'authenticated'; target: SshTarget };

export class SshProxy {
  readonly #d: SshProxyDeps;
  readonly #server: Server;
  /** Ours, not the library's: a client that never greets is bounded too (the library sees a client only once it greeted). */
  readonly #listener: NetServer;
  readonly #held = new Set<Held>();
  #idleTimer: NodeJS.Timeout | null = null;

  constructor(deps: SshProxyDeps) {
    this.#d = deps;
    const { keepaliveIntervalMs, keepaliveCountMax } = deps.config;
    this.#server = new ssh2.Server(
      {
        hostKeys: [deps.hostKey],
        ident: 'Gantry',
        ...(keepaliveIntervalMs > 0 ? { keepaliveInterval: keepaliveIntervalMs, keepaliveCountMax } : {}),
      },
      (client) => this.#accept(client),
    );
    const loginGraceMs = deps.loginGraceMs ?? 30_000;
    this.#listener = createServer((socket) => {
      // until it authenticates (then the keepalive and the idle timer take over)
      socket.setTimeout(loginGraceMs, () => socket.destroy());
      socket.on('error', () => socket.destroy());
      this.#server.injectSocket(socket);
    });
  }

  /** Listens; answers the port (the one the system picked, for port 0). */
  async listen(port: number, host: string): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.#listener.once('error', onError);
      this.#listener.listen(port, host, () => {
        this.#listener.off('error', onError);
        resolve();
      });
    });
    this.#listener.on('error', (err: Error) => this.#d.logger.warn({ err }, 'ssh proxy listener error'));
    this.#server.on('error', (err: Error) => this.#d.logger.debug({ err }, 'ssh connection error'));
    const { idleTimeoutMs } = this.#d.config;
    if (idleTimeoutMs > 0) {
      this.#idleTimer = setInterval(
        () => this.#closeIdle(),
        this.#d.idleCheckMs ?? Math.min(Math.max(idleTimeoutMs / 2, 10), 5000),
      );
      this.#idleTimer.unref();
    }
    const address = this.#listener.address();
    return typeof address === 'object' && address ? address.port : port;
  }

  /** Ends the sessions into this pod (it stopped): each gets a last line saying why. */
  closePod(podId: string, why = 'the pod stopped'): void {
    for (const held of this.#held) if (held.target?.podId === podId) this.#end(held, why);
  }

  /** Sessions open into this pod: how many shells run. */
  openShells(podId?: string): number {
    let n = 0;
    for (const held of this.#held) if (podId === undefined || held.target?.podId === podId) n += held.shells.size;
    return n;
  }

  async close(): Promise<void> {
    if (this.#idleTimer) clearInterval(this.#idleTimer);
    for (const held of this.#held) this.#end(held, 'the server is shutting down');
    if (this.#listener.listening) await new Promise<void>((resolve) => this.#listener.close(() => resolve()));
  }

  #accept(client: Connection): void {
    const { clock, logger } = this.#d;
    const held: Held = { client, target: null, lastActivity: clock.now(), shells: new Map(), ending: false };
    this.#held.add(held);
    const grace = setTimeout(() => drop(client), this.#d.loginGraceMs ?? 30_000);
    grace.unref();
    let attempts = 0;
    let sessions = 0;
    client.on('error', (err) => logger.debug({ err }, 'ssh connection error'));
    client.on('close', () => {
      clearTimeout(grace);
      this.#held.delete(held);
      for (const shell of held.shells.keys()) shell.close();
    });
    client.on('authentication', (ctx) => {
      if (++attempts > MAX_AUTH_ATTEMPTS) {
        ctx.reject([]);
        drop(client);
        return;
      }
      void this.#decide(ctx).then(
        (decision) => {
          if (decision.kind === 'refused') return ctx.reject(['publickey']);
          if (decision.kind === 'authenticated') held.target = decision.target;
          ctx.accept();
        },
        (err: unknown) => {
          logger.warn({ err }, 'ssh authentication failed on an error');
          ctx.reject(['publickey']);
        },
      );
    });
    client.on('ready', () => {
      clearTimeout(grace);
      socketOf(client)?.setTimeout(0);
      const target = held.target!;
      logger.info({ pod: target.podId, account: target.accountId }, 'ssh connection authenticated');
      client.on('session', (accept, reject) => {
        if (sessions >= MAX_SESSIONS) return reject();
        sessions += 1;
        const session = accept();
        session.on('close', () => (sessions -= 1));
        serveSession(session, {
          podId: target.podId,
          runtime: this.#d.runtime,
          logger,
          onActivity: () => (held.lastActivity = clock.now()),
          onShell: (shell, channel) => {
            held.lastActivity = clock.now();
            held.shells.set(shell, channel);
            return () => held.shells.delete(shell);
          },
        });
      });
      // Port forwarding, either way, and Unix socket forwarding: refused (the channel open fails
      // as "administratively prohibited"; ssh.direct has the full feature set).
      client.on('tcpip', (_accept, reject) => reject());
      client.on('openssh.streamlocal', (_accept, reject) => reject());
      client.on('request', (_accept, reject) => reject?.());
    });
  }

  /**
   * Only public keys: `none`, password, keyboard-interactive and hostbased are answered
   * "publickey". A key query (no signature) that matches is answered "ok" and the client signs;
   * only the signed request opens the connection.
   */
  async #decide(ctx: AuthContext): Promise<Decision> {
    if (ctx.method !== 'publickey' || !ctx.key) return { kind: 'refused' };
    const signed =
      ctx.signature && ctx.blob ? { blob: ctx.blob, signature: ctx.signature, hashAlgo: ctx.hashAlgo } : undefined;
    const target = await this.#d.authorizer.authorize(ctx.username, ctx.key, signed);
    if (!target) return { kind: 'refused' };
    return signed ? { kind: 'authenticated', target } : { kind: 'key-ok' };
  }

  #closeIdle(): void {
    const { idleTimeoutMs } = this.#d.config;
    const now = this.#d.clock.now();
    for (const held of this.#held)
      if (held.target && now - held.lastActivity >= idleTimeoutMs)
        this.#end(held, `idle for ${Math.round(idleTimeoutMs / 1000)} s: closing the session`);
  }

  #end(held: Held, why: string): void {
    if (held.ending) return;
    held.ending = true;
    const flushed: Array<Promise<unknown>> = [];
    for (const [shell, channel] of held.shells) {
      shell.stream.removeAllListeners('data');
      if (!channel.destroyed) {
        flushed.push(new Promise((resolve) => channel.once('close', resolve)));
        channel.write(`\r\n[gantry] ${why}\r\n`);
        channel.exit(1);
        channel.end();
      }
      shell.close();
    }
    held.shells.clear();
    this.#d.logger.info({ pod: held.target?.podId, why }, 'ssh connection closed by the proxy');
    // The client leaves once its channels closed, having printed the last line; a disconnect sent
    // sooner makes OpenSSH exit without printing what it still holds. Bounded: a client that does
    // not close is disconnected.
    const bound = new Promise((resolve) => setTimeout(resolve, 2000).unref());
    void Promise.race([Promise.all(flushed), bound]).then(() => drop(held.client));
  }
}

/** Disconnects, and closes the socket of a peer that does not close its side (a half-open or silent client). */
function drop(client: Connection): void {
  client.end();
  const socket = socketOf(client);
  setTimeout(() => socket?.destroy(), 1000).unref();
}

/** The connection's socket (the library keeps it as `_sock`). */
const socketOf = (client: Connection): Socket | undefined => (client as unknown as { _sock?: Socket })._sock;
