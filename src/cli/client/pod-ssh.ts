/**
 * `gantry pods ssh`: runs the system `ssh` with the endpoint the API's pod answer gives
 * (`ssh.proxy`, or `ssh.direct` with --direct; docs/ssh.md). The API key is not ssh's business:
 * ssh gets neither it in its arguments nor GANTRY_API_KEY in its environment; it authenticates
 * with the user's own SSH key.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { CliError, EXIT } from './exit-codes.js';
import type { ApiClient } from './http.js';
import type { Output } from './output.js';
import type { Pod, SshEndpoint } from './pod-view.js';

export async function podSsh(
  api: ApiClient,
  id: string,
  out: Output,
  options: { direct: boolean; print: boolean; sshArgs: string[] },
): Promise<number> {
  const pod = await api.get<Pod>(`/v2/pods/${encodeURIComponent(id)}`);
  const endpoint: SshEndpoint | null = options.direct ? pod.ssh.direct : pod.ssh.proxy;
  if (!endpoint)
    throw new CliError(
      EXIT.error,
      options.direct
        ? `pod ${id} has no direct SSH endpoint (${pod.status}): it needs 22/tcp in its ports, sshd in the image, and to be RUNNING`
        : `pod ${id} has no SSH proxy endpoint (${pod.status}): it needs a machine (not terminated) and the server's SSH proxy on`,
    );
  // ssh's own options go before the destination: after it they would be a remote command.
  const args = ['-p', String(endpoint.port), ...options.sshArgs, `${endpoint.username}@${endpoint.host}`];
  if (options.print) {
    const command = options.sshArgs.length ? ['ssh', ...args].join(' ') : endpoint.command;
    out.show({ command, host: endpoint.host, port: endpoint.port, username: endpoint.username }, () => command);
    return EXIT.ok;
  }
  const { GANTRY_API_KEY: _key, ...env } = process.env;
  const child = spawn('ssh', args, { stdio: 'inherit', env });
  return new Promise<number>((resolve, reject) => {
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new CliError(
          EXIT.error,
          err.code === 'ENOENT' ? 'ssh is not installed (or not on PATH); --print shows the command' : err.message,
        ),
      ),
    );
    child.once('exit', (code, signal) => resolve(code ?? 128 + (signal ? constants.signals[signal] : 0)));
  });
}
