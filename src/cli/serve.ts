import { parseArgs, configFrom, storeOptions, UsageError } from './args.js';
import { startServer } from '../main.js';

export const serveHelp = `gantry serve [--port N] [--host H] [--data-dir DIR] [--config FILE]

Starts the API server and the control loops.
  --port       PORT       listen port (default 8080)
  --host       GANTRY_HOST  listen address (default 127.0.0.1)
  --data-dir   GANTRY_DATA_DIR  data folder for SQLite, volumes and keys (default ./.gantry)
  --config     GANTRY_CONFIG    YAML or JSON config file
Signals: SIGTERM/SIGINT stop it; SIGHUP reads the TLS certificate files again (server.tls).
Environment: GANTRY_DATABASE_URL (postgres://… selects PostgreSQL), GANTRY_BOOTSTRAP_KEY (admin key on first start),
  GANTRY_RUNTIME (process: local processes on the demo fleet, the default; docker: containers on the
  Docker Engine at DOCKER_HOST, default unix:///var/run/docker.sock, its host discovered).`;

export async function serve(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { ...storeOptions, port: { type: 'string' }, host: { type: 'string' } },
    strict: true,
  });
  if (values.help) return void console.log(serveHelp);
  if (values.port !== undefined && !/^\d+$/.test(values.port))
    throw new UsageError(`--port must be a number, got "${values.port}"`);
  const server = await startServer(configFrom(values));
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    server.services.logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    await server.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  // the certificates are read again (server.tls); without a handler SIGHUP would end the process
  process.on('SIGHUP', () => void server.reloadCertificates());
}
