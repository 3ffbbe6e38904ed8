/**
 * Which certificate authorities the command line and the agent trust when they call a control
 * plane over HTTPS: the system's (Node's bundled roots, plus `NODE_EXTRA_CA_CERTS`), and a CA file
 * given by `--ca-file` or `GANTRY_CA_FILE` (a private CA, a self-signed certificate). Verification
 * is never turned off; a failed one is described with what to do about it.
 */
import { readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import https from 'node:https';
import { rootCertificates } from 'node:tls';

const CA_FILE_ENV = 'GANTRY_CA_FILE';

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** The certificates of a PEM file; throws saying why when it holds none. */
function readCaFile(path: string, label = '--ca-file'): string[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(
      `${label} ${path} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      {
        cause: err,
      },
    );
  }
  const blocks = text.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) throw new Error(`${label} ${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch (err) {
      throw new Error(`${label} ${path} holds a certificate that cannot be read: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
  return blocks;
}

/** The system's authorities as Node trusts them: its roots, and `NODE_EXTRA_CA_CERTS` when it is readable. */
function systemAuthorities(env: NodeJS.ProcessEnv): string[] {
  const extra = env.NODE_EXTRA_CA_CERTS;
  if (!extra) return [...rootCertificates];
  try {
    return [...rootCertificates, ...readCaFile(extra, 'NODE_EXTRA_CA_CERTS')];
  } catch {
    // Node itself warned at start that it could not load it
    return [...rootCertificates];
  }
}

type Dispatcher = object;
type DispatcherClass = new (options: { connect: { ca: string[] } }) => Dispatcher;
/** Where Node's `fetch` (undici inside Node) looks for its dispatcher; undici documents it as its global. */
const FETCH_DISPATCHER = Symbol.for('undici.globalDispatcher.1');

/**
 * From now on this process trusts the system's authorities and those of `caFile`: Node's `fetch`
 * (the CLI's and the agent's calls) and `https.request` through the global agent (the agent's
 * streams). Node 20 has no call that adds to the default store, so both are given the whole list.
 */
export async function trustCaFile(caFile: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const ca = [...systemAuthorities(env), ...readCaFile(caFile)];
  https.globalAgent.options.ca = ca;
  // Node makes fetch's dispatcher on its first use: one fetch of a data: URL makes it, and its class.
  await (await fetch('data:,')).arrayBuffer();
  const slot = globalThis as unknown as Record<symbol, Dispatcher | undefined>;
  const current = slot[FETCH_DISPATCHER];
  if (!current) throw new Error(`cannot apply ${caFile}: this Node's fetch has no global dispatcher`);
  slot[FETCH_DISPATCHER] = new (current.constructor as DispatcherClass)({ connect: { ca } });
}

/** `--ca-file` (or `GANTRY_CA_FILE`), when one is given. */
export const caFileFrom = (flag: string | undefined, env: NodeJS.ProcessEnv): string | null =>
  flag ?? (env[CA_FILE_ENV] || null);

const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
]);

/**
 * What a failed connection's error code means when it is a certificate check, and what to do; the
 * code as it is otherwise (ECONNREFUSED, ENOTFOUND, …).
 */
export function describeConnectFailure(code: string): string {
  if (UNTRUSTED.has(code))
    return `${code}: the server's TLS certificate is not signed by an authority this machine trusts; pass the CA that signed it with --ca-file FILE or ${CA_FILE_ENV} (NODE_EXTRA_CA_CERTS works too), or add it to the system's store`;
  if (code === 'CERT_HAS_EXPIRED') return `${code}: the server's TLS certificate has expired`;
  if (code === 'CERT_NOT_YET_VALID') return `${code}: the server's TLS certificate is not valid yet (check the clocks)`;
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return `${code}: the server's TLS certificate does not name the host in the URL; use a name (or address) the certificate lists`;
  if (code === 'EPROTO' || code === 'ERR_SSL_WRONG_VERSION_NUMBER')
    return `${code}: the TLS handshake failed (is the server speaking plain http at an https:// URL?)`;
  return code;
}
