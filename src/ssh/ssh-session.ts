/**
 * One SSH session channel of the proxy: a terminal (`pty-req`), then an interactive shell inside
 * the pod through the runtime's `shell()`, with window changes passed through. Everything else a
 * session may ask for is refused: commands (`ssh host cmd`, scp, rsync), subsystems (sftp), agent
 * and X11 forwarding, env. A refused command or subsystem gets the reason on its stderr and exit
 * status 1, so the user reads why rather than a bare failure.
 */
import type { ServerChannel, Session } from 'ssh2';
import type { Logger } from 'pino';
import type { Runtime, ShellSession } from '../runtime/runtime.js';

/** What a refused command or subsystem reads on its stderr. */
const INTERACTIVE_ONLY =
  'The Gantry SSH proxy opens interactive shells only: commands (ssh host <command>), scp, sftp, rsync and port forwarding are refused. ' +
  'For those, publish 22/tcp and run sshd in the pod, then connect with its ssh.direct endpoint (docs/ssh.md).';

export interface SessionContext {
  podId: string;
  runtime: Pick<Runtime, 'shell'>;
  logger: Logger;
  /** called on traffic either way (the idle timer) */
  onActivity(): void;
  /** called with an opened shell and its channel (the server ends them when the pod stops); answers what to call once it ended */
  onShell(shell: ShellSession, channel: ServerChannel): () => void;
}

/** The terminal size when a client asks for a shell without a terminal (`ssh -T`). */
const DEFAULT_PTY = { cols: 80, rows: 24, term: 'xterm' };

export function serveSession(session: Session, ctx: SessionContext): void {
  let pty = { ...DEFAULT_PTY };
  let shell: ShellSession | null = null;
  let started = false;

  session.on('pty', (accept, _reject, info) => {
    pty = {
      cols: info.cols || DEFAULT_PTY.cols,
      rows: info.rows || DEFAULT_PTY.rows,
      term: /^[\w.+-]{1,64}$/.test(info.term) ? info.term : DEFAULT_PTY.term,
    };
    accept();
  });
  session.on('window-change', (accept, _reject, info) => {
    accept?.();
    if (info.cols > 0 && info.rows > 0) {
      pty = { ...pty, cols: info.cols, rows: info.rows };
      shell?.resize(info.cols, info.rows);
    }
  });
  for (const refused of ['env', 'x11', 'auth-agent'] as const) session.on(refused, (_accept, reject) => reject?.());
  session.on('signal', (accept) => accept?.());
  session.on('exec', (accept) => refuse(accept()));
  session.on('subsystem', (accept) => refuse(accept()));
  session.on('shell', (accept, reject) => {
    if (started) return reject();
    started = true;
    void openShell(accept());
  });
  session.on('close', () => shell?.close());

  async function openShell(channel: ServerChannel): Promise<void> {
    if (!ctx.runtime.shell) return refuse(channel, "This pod's runtime cannot open a shell inside it.");
    let opened: ShellSession;
    try {
      opened = await ctx.runtime.shell(ctx.podId, pty);
    } catch (err) {
      return refuse(channel, `Cannot open a shell in the pod: ${(err as Error).message}`);
    }
    if (channel.destroyed) return opened.close();
    shell = opened;
    const ended = ctx.onShell(opened, channel);
    ctx.logger.info({ pod: ctx.podId }, 'ssh session opened a shell');
    const { stream } = opened;
    channel.on('data', (chunk: Buffer) => {
      ctx.onActivity();
      stream.write(chunk);
    });
    stream.on('data', (chunk: Buffer) => {
      ctx.onActivity();
      channel.write(chunk);
    });
    stream.on('error', () => opened.close());
    channel.on('error', () => opened.close());
    channel.on('close', () => opened.close());
    const code = await opened.exited.catch(() => null);
    shell = null;
    ended();
    ctx.logger.info({ pod: ctx.podId, exitCode: code }, 'ssh session shell ended');
    if (!channel.destroyed) {
      channel.exit(code ?? 1);
      channel.end();
    }
  }
}

/** Writes why to the channel's stderr, exit status 1, and ends it. */
function refuse(channel: ServerChannel, why = INTERACTIVE_ONLY): void {
  channel.stderr.write(`${why}\r\n`);
  channel.exit(1);
  channel.end();
}
