import { parseArgs } from 'node:util';
import { loadConfig, type Config } from '../config.js';

/** Options every command that touches the store accepts. */
export const storeOptions = {
  'data-dir': { type: 'string' },
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export function configFrom(values: { 'data-dir'?: string; config?: string; port?: string; host?: string }): Config {
  return loadConfig({
    env: process.env,
    flags: {
      ...(values['data-dir'] ? { dataDir: values['data-dir'] } : {}),
      ...(values.config ? { config: values.config } : {}),
      ...(values.port ? { port: Number(values.port) } : {}),
      ...(values.host ? { host: values.host } : {}),
    },
  });
}

export { parseArgs };

export { UsageError } from './usage-error.js';
