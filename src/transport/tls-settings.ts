/** What the listeners read of `server.tls` (src/config-tls.ts checks and resolves it). */
export interface CertificateFiles {
  certFile: string;
  keyFile: string;
}

/** `server.tls` resolved: absolute paths. */
export interface TlsConfig {
  main: CertificateFiles;
  sni: CertificateFiles[];
}
