/**
 * The certificates the listeners serve over HTTPS (`server.tls`, docs/deploy.md "HTTPS"): the
 * main one, and more picked by the name the client asks for (SNI) among their DNS names. `reload()`
 * (SIGHUP) reads every file again and swaps them in only when all of them load: new connections
 * get the new certificates, open ones keep the context they were made with; a file that cannot be
 * read, or a key that does not match its certificate, leaves the old ones serving.
 */
import { readFileSync } from 'node:fs';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { createSecureContext, type SecureContext, type Server as TlsServer, type TlsOptions } from 'node:tls';
import type { Logger } from 'pino';
import type { CertificateFiles, TlsConfig } from '../transport/tls-settings.js';

/** One certificate loaded: its files' contents, what it covers and until when. */
export interface LoadedCertificate {
  files: CertificateFiles;
  key: Buffer;
  cert: Buffer;
  context: SecureContext;
  x509: X509Certificate;
  /** SHA-256 fingerprint, as `openssl x509 -fingerprint -sha256` writes it */
  fingerprint: string;
  validTo: string;
}

/** A certificate and key read from files and checked together; throws saying which file and why. */
function loadCertificate(files: CertificateFiles): LoadedCertificate {
  const read = (path: string, what: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (err) {
      throw new Error(
        `cannot read the TLS ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        {
          cause: err,
        },
      );
    }
  };
  const cert = read(files.certFile, 'certificate');
  const key = read(files.keyFile, 'key');
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (err) {
    throw new Error(`${files.certFile} holds no PEM certificate: ${(err as Error).message}`, { cause: err });
  }
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    throw new Error(`${files.keyFile} holds no (unencrypted) PEM private key: ${(err as Error).message}`, {
      cause: err,
    });
  }
  if (!x509.checkPrivateKey(privateKey))
    throw new Error(`the key ${files.keyFile} is not the key of the certificate ${files.certFile}`);
  let context: SecureContext;
  try {
    context = createSecureContext({ key, cert });
  } catch (err) {
    throw new Error(`${files.certFile} with ${files.keyFile}: ${(err as Error).message}`, { cause: err });
  }
  return { files, key, cert, context, x509, fingerprint: x509.fingerprint256, validTo: x509.validTo };
}

/** What a reload did: the certificates now served, or why the old ones are kept. */
export type ReloadOutcome = { ok: true; certificates: LoadedCertificate[] } | { ok: false; error: string };

export class ServerCertificates {
  #main: LoadedCertificate;
  #sni: LoadedCertificate[];
  readonly #servers = new Set<TlsServer>();

  constructor(private readonly config: TlsConfig) {
    this.#main = loadCertificate(config.main);
    this.#sni = config.sni.map(loadCertificate);
  }

  /** Every certificate served, the main one first. */
  get certificates(): LoadedCertificate[] {
    return [this.#main, ...this.#sni];
  }

  /**
   * Options for `https.createServer`: the main certificate, and the SNI choice. A handshake must
   * end within `handshakeTimeoutMs` (a connection that never finishes one is not a request yet).
   */
  serverOptions(handshakeTimeoutMs: number): TlsOptions {
    return {
      key: this.#main.key,
      cert: this.#main.cert,
      SNICallback: (servername, done) => done(null, this.contextFor(servername)),
      ...(handshakeTimeoutMs > 0 ? { handshakeTimeout: handshakeTimeoutMs } : {}),
    };
  }

  /** The context for a name a client asked for: the first extra certificate covering it, else the main one. */
  contextFor(servername: string): SecureContext {
    const name = servername.toLowerCase();
    for (const extra of this.#sni) if (extra.x509.checkHost(name) !== undefined) return extra.context;
    return this.#main.context;
  }

  /** Follows `server`: a reload swaps its default certificate too (clients that send no name). */
  attach(server: TlsServer): void {
    this.#servers.add(server);
    server.once('close', () => this.#servers.delete(server));
  }

  /** Reads every file again; all of them load, or none is swapped. */
  reload(): ReloadOutcome {
    let main: LoadedCertificate;
    let sni: LoadedCertificate[];
    try {
      main = loadCertificate(this.config.main);
      sni = this.config.sni.map(loadCertificate);
    } catch (err) {
      return { ok: false, error: (err as Error).message };
    }
    this.#main = main;
    this.#sni = sni;
    for (const server of this.#servers) server.setSecureContext({ key: main.key, cert: main.cert });
    return { ok: true, certificates: this.certificates };
  }
}

/** `certificates.reload()` with its outcome logged (the SIGHUP handler's). */
export function reloadCertificates(
  certificates: ServerCertificates | null,
  logger: Pick<Logger, 'info' | 'warn' | 'error'>,
): ReloadOutcome | null {
  if (!certificates) {
    logger.warn('SIGHUP: there are no TLS certificates to reload (server.tls is not set)');
    return null;
  }
  const outcome = certificates.reload();
  if (outcome.ok)
    logger.info(
      {
        certificates: outcome.certificates.map((c) => ({
          file: c.files.certFile,
          fingerprint: c.fingerprint,
          validTo: c.validTo,
        })),
      },
      'reloaded the TLS certificates: new connections get them, open ones go on',
    );
  else
    logger.error(
      { error: outcome.error },
      `the TLS certificates were not reloaded, the previous ones are still served: ${outcome.error}`,
    );
  return outcome;
}
