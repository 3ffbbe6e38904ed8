/**
 * The real OpenSSH client against the SSH proxy: keys made with `ssh-keygen`, sessions run with
 * `ssh -tt` (a terminal even though stdin is a pipe), nothing read from the user's own ssh
 * config, agent or known_hosts.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Why the OpenSSH tests cannot run here, or false. */
export const noOpenSsh = (): string | false =>
  spawnSync('ssh', ['-V'], { encoding: 'utf8' }).error
    ? 'the OpenSSH client (ssh) is not installed: apt-get install openssh-client'
    : false;

export interface KeyPair {
  /** the private key file */
  path: string;
  /** the authorized_keys line */
  publicKey: string;
}

/** A fresh ed25519 key pair without a passphrase. */
export function newKeyPair(comment = 'gantry-test'): KeyPair {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-sshkey-'));
  const path = join(dir, 'id_ed25519');
  const r = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', path], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ssh-keygen failed: ${r.stderr}`);
  return { path, publicKey: readFileSync(`${path}.pub`, 'utf8').trim() };
}

export interface SshRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface SshOptions {
  user: string;
  port: number;
  key: string;
  host?: string;
  /** typed into the session (with -tt), line by line as given */
  input?: string;
  /** a remote command (exec request) */
  command?: string[];
  /** more client arguments, before the destination */
  args?: string[];
  /** the client program: `ssh` or `sftp` */
  program?: 'ssh' | 'sftp';
  timeoutMs?: number;
  /** told each piece of standard output as it arrives (to wait for what the session printed) */
  onStdout?: (chunk: string) => void;
}

const COMMON = [
  '-F',
  '/dev/null',
  '-o',
  'StrictHostKeyChecking=no',
  '-o',
  'UserKnownHostsFile=/dev/null',
  '-o',
  'BatchMode=yes',
  '-o',
  'IdentitiesOnly=yes',
  '-o',
  'LogLevel=ERROR',
];

/** Runs the client to its end (killed after `timeoutMs`); answers its exit code and output. */
export function runSsh(o: SshOptions): Promise<SshRun> {
  const program = o.program ?? 'ssh';
  const portFlag = program === 'sftp' ? '-P' : '-p';
  const args = [
    ...(program === 'ssh' && !o.command ? ['-tt'] : []),
    '-i',
    o.key,
    portFlag,
    String(o.port),
    ...COMMON,
    ...(o.args ?? []),
    `${o.user}@${o.host ?? '127.0.0.1'}`,
    ...(o.command ?? []),
  ];
  const child = spawn(program, args, { env: { ...process.env, SSH_AUTH_SOCK: '' }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    o.onStdout?.(d.toString());
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  if (o.input !== undefined) child.stdin.write(o.input);
  else child.stdin.end();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs ?? 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
