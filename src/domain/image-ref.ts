/**
 * Image references as the Docker Engine reads them (the distribution project's "normalized name"
 * rules): the repository and tag a pull asks for, and the registry host the engine contacts for
 * it. One place for both, because the registry policy must judge the very host the pull reaches.
 */

/** The registry a reference that names none is pulled from. */
export const DOCKER_HUB = 'docker.io';

/** Docker Hub's legacy name: the engine reads it as {@link DOCKER_HUB}. */
const LEGACY_DOCKER_HUB = 'index.docker.io';

/**
 * `registry:5000/team/app:1.2` → repo `registry:5000/team/app`, tag `1.2`; no tag → `latest` (never
 * every tag); a digest (`team/app@sha256:…`) is kept whole as the tag. The repository is what the
 * Engine API's pull (`fromImage`) is given.
 */
export function splitImageRef(ref: string): { repo: string; tag: string } {
  const at = ref.indexOf('@');
  if (at >= 0) return { repo: ref.slice(0, at), tag: ref.slice(at + 1) };
  const slash = ref.lastIndexOf('/');
  const colon = ref.lastIndexOf(':');
  if (colon > slash) return { repo: ref.slice(0, colon), tag: ref.slice(colon + 1) };
  return { repo: ref, tag: 'latest' };
}

/**
 * The registry a repository lives on, as the engine decides it: the first path component, when
 * there is more than one and it contains `.` or `:` (`ghcr.io`, `registry:5000`, `[::1]:5000`),
 * is `localhost`, or has an upper-case letter (repositories are lower-case, so the engine takes such
 * a component for a host name); otherwise Docker Hub. `localhost:5000` alone is Docker Hub's
 * `library/localhost`, tag `5000`.
 */
export function registryOf(repo: string): string {
  const slash = repo.indexOf('/');
  if (slash < 0) return DOCKER_HUB;
  const first = repo.slice(0, slash);
  if (first === LEGACY_DOCKER_HUB) return DOCKER_HUB;
  const isHost = first.includes('.') || first.includes(':') || first === 'localhost' || first.toLowerCase() !== first;
  return isHost ? first : DOCKER_HUB;
}

/** The registry a pull of the image reference `ref` contacts. */
export const registryOfImage = (ref: string): string => registryOf(splitImageRef(ref).repo);

/** A registry as `host[:port]`. */
export interface RegistryHost {
  /** Lower-case; an IPv6 address without its brackets. */
  host: string;
  /** null: the registry's default (443). */
  port: number | null;
  /** Written as a bracketed IPv6 address. */
  bracketed: boolean;
}

/** A DNS label as the reference grammar has it: letters, digits and inner dashes. */
const LABEL = /^[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?$/;

/**
 * `host`, `host:port`, `[ipv6]` or `[ipv6]:port`, as the reference grammar allows a registry to be
 * written (dot-separated labels, or a bracketed IPv6 address of hex digits and colons; a port of
 * digits, at most 65535); null for anything else, which the engine refuses as an invalid
 * reference or cannot connect to.
 */
export function parseRegistryHost(text: string): RegistryHost | null {
  let host: string;
  let rest: string;
  let bracketed = false;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0) return null;
    host = text.slice(1, close);
    rest = text.slice(close + 1);
    if (!/^[0-9a-fA-F:]+$/.test(host)) return null;
    bracketed = true;
  } else {
    const colon = text.indexOf(':');
    host = colon < 0 ? text : text.slice(0, colon);
    rest = colon < 0 ? '' : text.slice(colon);
    if (!host.split('.').every((label) => LABEL.test(label))) return null;
  }
  if (rest === '') return { host: host.toLowerCase(), port: null, bracketed };
  const port = /^:[0-9]{1,5}$/.test(rest) ? Number(rest.slice(1)) : NaN;
  if (!(port <= 65535)) return null;
  return { host: host.toLowerCase(), port, bracketed };
}

/** `host[:port]` again, IPv6 in brackets: the canonical text of a parsed registry. */
export const registryText = (r: RegistryHost): string =>
  `${r.bracketed ? `[${r.host}]` : r.host}${r.port === null ? '' : `:${r.port}`}`;
