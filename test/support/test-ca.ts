/**
 * A certificate authority made for a test with `openssl` (P-256 keys, valid two days), and server
 * certificates it signs for the names and addresses given: what an operator's CA or a public one
 * would hand out, so the TLS tests run real handshakes against real verification.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface CertificateFiles {
  certFile: string;
  keyFile: string;
}

const openssl = (args: string[]): void => void execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });

/** A new CA in a folder of its own. */
export function makeCa(name = 'Gantry Test CA'): CertificateFiles & { dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-test-ca-'));
  const certFile = join(dir, 'ca.pem');
  const keyFile = join(dir, 'ca.key');
  openssl([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    keyFile,
    '-out',
    certFile,
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return { dir, certFile, keyFile };
}

let serial = 0;

/** A server certificate of `ca` for `dnsNames` and `ips`, written beside the CA as `{label}.pem` and `{label}.key`. */
export function issueCertificate(
  ca: CertificateFiles & { dir: string },
  label: string,
  names: { dns?: string[]; ips?: string[] },
): CertificateFiles {
  const certFile = join(ca.dir, `${label}.pem`);
  const keyFile = join(ca.dir, `${label}.key`);
  const csr = join(ca.dir, `${label}.csr`);
  const ext = join(ca.dir, `${label}.ext`);
  const san = [...(names.dns ?? []).map((d) => `DNS:${d}`), ...(names.ips ?? []).map((i) => `IP:${i}`)].join(',');
  writeFileSync(
    ext,
    `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n`,
  );
  openssl([
    'req',
    '-new',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    keyFile,
    '-out',
    csr,
    '-subj',
    `/CN=${names.dns?.[0] ?? names.ips?.[0] ?? label}`,
  ]);
  serial += 1;
  openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.certFile,
    '-CAkey',
    ca.keyFile,
    '-set_serial',
    String(Date.now() + serial),
    '-days',
    '2',
    '-extfile',
    ext,
    '-out',
    certFile,
  ]);
  return { certFile, keyFile };
}
