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
  if (!isHostComponent(repo)) return DOCKER_HUB;
  const first = repo.slice(0, repo.indexOf('/'));
  return first === LEGACY_DOCKER_HUB ? DOCKER_HUB : first;
}

/** Whether the repository's first path component names a registry host (the rule of {@link registryOf}). */
function isHostComponent(repo: string): boolean {
  const slash = repo.indexOf('/');
  if (slash < 0) return false;
  const first = repo.slice(0, slash);
  return first.includes('.') || first.includes(':') || first === 'localhost' || first.toLowerCase() !== first;
}

/** The registry a pull of the image reference `ref` contacts. */
export const registryOfImage = (ref: string): string => registryOf(splitImageRef(ref).repo);

/**
 * An image reference in the one spelling the engine stores it under, so that `ubuntu`,
 * `library/ubuntu`, `docker.io/library/ubuntu:latest` and `index.docker.io/library/ubuntu` compare
 * equal, and so that what reaches the engine is always a name: the engine reads a bare name it does
 * not hold as a prefix of an image ID (`7e3393d6ab3e`, `sha256:7e33`), which a fully qualified
 * name never is.
 */
export interface CanonicalImage {
  /**
   * `registry/path`: the registry lower-case, Docker Hub as `docker.io`, its official images under
   * `library/`. Registries grant pulls per repository, so this is what access is judged on: every
   * tag and digest of a repository shares it.
   */
  repository: string;
  /** The repository with its `:tag` (`latest` when none) or its `@digest` (a tag beside a digest is dropped, as the engine drops it). */
  ref: string;
}

export function canonicalImage(image: string): CanonicalImage {
  const at = image.indexOf('@');
  let name = at < 0 ? image : image.slice(0, at);
  const digest = at < 0 ? null : image.slice(at + 1);
  let tag: string | null = null;
  const colon = name.lastIndexOf(':');
  if (colon > name.lastIndexOf('/')) {
    tag = name.slice(colon + 1);
    name = name.slice(0, colon);
  }
  const registry = registryOf(name);
  let path = isHostComponent(name) ? name.slice(name.indexOf('/') + 1) : name;
  if (registry === DOCKER_HUB && !path.includes('/')) path = `library/${path}`;
  const repository = `${registry.toLowerCase()}/${path}`;
  return { repository, ref: digest !== null ? `${repository}@${digest}` : `${repository}:${tag ?? 'latest'}` };
}

/**
 * Why the engine would read `image` as an image ID (or a prefix of one) rather than a name, or
 * null: a bare 64-hex ID, anything `sha256:` / `sha384:` / `sha512:` leads with, or the 12-hex short
 * ID `docker images` prints. An ID names whatever the engine holds, another account's privately
 * pulled image included, without saying which repository it is from.
 */
export function imageIdProblem(image: string): string | null {
  if (/^(sha256|sha384|sha512):/i.test(image) || /^[0-9a-f]{12,64}$/i.test(image))
    return `"${image.slice(0, 80)}" names an image by its ID, not by repository: an ID could name an image another account pulled with its own registry credential. Name it as repository:tag or repository@sha256:digest`;
  return null;
}

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
