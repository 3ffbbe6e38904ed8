/**
 * Which network a serverless worker's container joins. A worker calls back the job URL it is
 * given; on loopback (Gantry on 127.0.0.1, the single-machine default) only the host's own network
 * reaches it, so the worker shares that network, and with it everything else on the host's
 * loopback. The one place this is decided: the worker's instance spec and the rule on how many
 * accounts a deployment may serve (runtime/account-isolation.ts) both ask here.
 */
import { nonPublicKind } from './ip-address.js';

/** The network of a worker given `jobUrl`: `host` when the URL is on loopback, else its own. */
export function workerNetworkMode(jobUrl: string): 'host' | 'default' {
  return isLoopbackUrl(jobUrl) ? 'host' : 'default';
}

/** Whether the URL's host is this machine's loopback: `localhost`, 127.0.0.0/8 or ::1. */
export function isLoopbackUrl(url: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return false;
  }
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  return nonPublicKind(host) === 'loopback';
}
