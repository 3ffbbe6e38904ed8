/** `server.tls` and `server.trustedProxies`: HTTPS on Gantry's own listeners, or behind a reverse proxy (docs/deploy.md, "HTTPS"). */
import { isAbsolute, join } from 'node:path';
import { isIP } from 'node:net';
import { Type, type StaticDecode } from '@sinclair/typebox';
import { orNull } from './config-fields.js';
import { fail } from './config-values.js';
import type { TlsConfig } from './transport/tls-settings.js';

const pemFile = (description: string, env?: string) =>
  orNull(Type.String({ pattern: '\\S', mustBe: 'a file path' }), description, env ? { env } : {});

const CertificateSchema = Type.Object(
  {
    certFile: Type.String({ pattern: '\\S', mustBe: 'a file path', description: 'PEM certificate (chain).' }),
    keyFile: Type.String({ pattern: '\\S', mustBe: 'a file path', description: 'PEM private key.' }),
  },
  { mustBe: 'an object { certFile, keyFile }' },
);

export const TlsSchema = Type.Object(
  {
    certFile: pemFile(
      "PEM certificate (the leaf first, then its chain) of the main, job and pod-proxy listeners; with `keyFile`, they serve HTTPS (HTTP/1.1) and the URLs Gantry derives start with https://. Read again on SIGHUP: open connections keep going, new ones get the new certificate; a file that cannot be read then keeps the old one (an error in the log). Relative to the config file's folder. null: plain HTTP (or TLS at a reverse proxy, `trustedProxies`).",
      'GANTRY_TLS_CERT_FILE',
    ),
    keyFile: pemFile(
      "The PEM private key of `certFile` (unencrypted; readable by Gantry's user only).",
      'GANTRY_TLS_KEY_FILE',
    ),
    sni: Type.Array(CertificateSchema, {
      default: [],
      mustBe: 'a list of { certFile, keyFile }',
      description:
        'More certificates, each `{ certFile, keyFile }`, picked by the name a client asks for (SNI) among their DNS names (a wildcard `*.pods.example.com` covers `proxy.domain` and `proxy.loadBalancer.domain`); a name none covers, or no name (an IP address), gets `certFile`. Reloaded with it.',
    }),
  },
  { description: 'HTTPS on the listeners (docs/deploy.md, "HTTPS").', default: {} },
);

export const trustedProxiesField = () =>
  Type.Array(Type.String({ pattern: '\\S' }), {
    default: [],
    env: 'GANTRY_TRUSTED_PROXIES',
    envList: true,
    mustBe: 'a list of IP addresses or CIDR ranges',
    description:
      "Reverse proxies (IP addresses or CIDR ranges, e.g. `127.0.0.1`, `10.0.0.0/8`, `::1`) whose `X-Forwarded-For`, `-Proto` and `-Host` are believed: a request's client address is then the right-most one in `X-Forwarded-For` that is not a trusted proxy, and the rate limits of callers without a key, the count of wrong host credentials and the request log lines (`client`) key on it. From any other peer these headers are ignored. The per-client connection cap still counts the proxy's address (it sees only the proxy's connections). Empty: none trusted.",
  });

type TlsSection = StaticDecode<typeof TlsSchema>;

/** Checks and resolves `server.tls` (paths relative to `configDir`); null when no certificate is set. */
export function resolveTls(section: TlsSection, configDir: string): TlsConfig | null {
  const at = (path: string): string => (isAbsolute(path) ? path : join(configDir, path));
  if ((section.certFile === null) !== (section.keyFile === null))
    fail('server.tls needs both certFile and keyFile (GANTRY_TLS_CERT_FILE, GANTRY_TLS_KEY_FILE), or neither');
  if (section.certFile === null || section.keyFile === null) {
    if (section.sni.length > 0)
      fail('server.tls.sni needs server.tls.certFile and keyFile: the certificate served when no other matches');
    return null;
  }
  return {
    main: { certFile: at(section.certFile), keyFile: at(section.keyFile) },
    sni: section.sni.map((c) => ({ certFile: at(c.certFile), keyFile: at(c.keyFile) })),
  };
}

/** Checks each entry of `server.trustedProxies` is an address or a CIDR range. */
export function checkTrustedProxies(entries: string[]): string[] {
  return entries.map((entry) => {
    const text = entry.trim();
    const [address, bits, extra] = text.split('/');
    const family = isIP(address ?? '');
    const max = family === 4 ? 32 : 128;
    if (family === 0 || extra !== undefined || (bits !== undefined && !(/^\d{1,3}$/.test(bits) && Number(bits) <= max)))
      fail(`server.trustedProxies: "${entry}" is not an IP address or a CIDR range (10.0.0.0/8, 2001:db8::/32)`);
    return text;
  });
}
