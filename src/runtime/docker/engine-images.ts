/**
 * The Engine API's image calls: inspect, pull (with a registry credential), ask a registry for a
 * manifest, import a root filesystem, list and remove. A pull and an import answer with a progress
 * stream, read to its end here: the engine reports most failures inside it, with a 200 status.
 */
import type { Readable } from 'node:stream';
import { registryOf, registryOfImage, splitImageRef } from '../../domain/image-ref.js';
import { enc, gone, orNull, type EngineCalls } from './engine-calls.js';
import { DockerEngineError, type EngineRequest } from './engine-connection.js';
import { ndjson } from './engine-streams.js';
import type { DistributionInspect, ImageInspect, ImageSummary, ProgressMessage } from './engine-types.js';

export interface RegistryCredential {
  username: string;
  password: string;
}

export interface PullOptions {
  auth?: RegistryCredential | null;
  onProgress?: (m: ProgressMessage) => void;
  inactivityMs?: number;
}

/** What an imported image is tagged; `changes` are Dockerfile instructions (`CMD ["sh"]`). */
export interface ImportTarget {
  repo: string;
  tag: string;
  changes?: string[];
}

/** How long the engine may take to answer for a registry (`/distribution`). @default 60000 */
const REGISTRY_ANSWER_MS = 60_000;

/** A pull that shows no progress for this long is given up. @default 300000 */
const PULL_INACTIVITY_MS = 300_000;

export async function inspectImage(calls: EngineCalls, ref: string): Promise<ImageInspect | null> {
  return orNull(
    calls.conn.json<ImageInspect>({
      method: 'GET',
      path: `/images/${enc(ref)}/json`,
      doing: `inspecting image "${ref}"`,
    }),
  );
}

/**
 * Pulls `ref` (with the registry credential when given), reading the progress stream to its end:
 * the engine reports most failures inside the stream, with a 200 status. `onProgress` hears each
 * message (never the credential).
 */
export async function pullImage(calls: EngineCalls, ref: string, options: PullOptions = {}): Promise<void> {
  const { repo, tag } = splitImageRef(ref);
  const headers: Record<string, string> = {};
  if (options.auth) headers['x-registry-auth'] = registryAuthHeader(options.auth, registryOf(repo));
  const doing = `pulling image "${ref}"`;
  await readProgress(
    calls,
    { method: 'POST', path: '/images/create', query: { fromImage: repo, tag }, headers, doing },
    options.onProgress,
    options.inactivityMs ?? PULL_INACTIVITY_MS,
  );
}

/**
 * Asks the registry (through the engine, with the credential when given) for the manifest `ref`
 * names (`GET /distribution/{name}/json`): its digest, with no download and no local tag changed.
 * The engine answers from the registry, never from its own images: a registry that refuses the
 * credential, or cannot be reached, rejects.
 */
export async function inspectDistribution(
  calls: EngineCalls,
  ref: string,
  auth: RegistryCredential | null,
): Promise<DistributionInspect> {
  const headers: Record<string, string> = {};
  if (auth) headers['x-registry-auth'] = registryAuthHeader(auth, registryOfImage(ref));
  return (
    await calls.conn.json<DistributionInspect>({
      method: 'GET',
      path: `/distribution/${enc(ref)}/json`,
      headers,
      // Past the engine's own registry timeouts (a 30 s dial): its reason, not ours, says why.
      timeoutMs: Math.max(calls.timeoutMs, REGISTRY_ANSWER_MS),
      doing: `asking the registry for image "${ref}"`,
    })
  ).body;
}

/** Imports a root filesystem tar as image `repo:tag`; `changes` are Dockerfile instructions (`CMD ["sh"]`). */
export async function importImage(calls: EngineCalls, tar: Readable, target: ImportTarget): Promise<void> {
  const query = new URLSearchParams({ fromSrc: '-', repo: target.repo, tag: target.tag });
  for (const change of target.changes ?? []) query.append('changes', change);
  await readProgress(
    calls,
    {
      method: 'POST',
      path: `/images/create?${query.toString()}`,
      bodyStream: tar,
      contentType: 'application/x-tar',
      doing: `importing image "${target.repo}:${target.tag}"`,
    },
    undefined,
    PULL_INACTIVITY_MS,
  );
}

/** Every image the engine holds, with the tags and digests it is known by. */
export async function listImages(calls: EngineCalls): Promise<ImageSummary[]> {
  return (await calls.conn.json<ImageSummary[]>({ method: 'GET', path: '/images/json', doing: 'listing images' })).body;
}

export async function removeImage(calls: EngineCalls, ref: string): Promise<boolean> {
  return gone(calls.conn.json({ method: 'DELETE', path: `/images/${enc(ref)}`, doing: `removing image "${ref}"` }));
}

/**
 * `X-Registry-Auth`: base64url of `{ username, password, serveraddress }`, padded: engines before
 * 23 decode it with Go's padded URL encoding and, failing, pull with no credential at all.
 */
export function registryAuthHeader(auth: RegistryCredential, serveraddress: string): string {
  const encoded = Buffer.from(
    JSON.stringify({ username: auth.username, password: auth.password, serveraddress }),
  ).toString('base64url');
  return encoded.padEnd(Math.ceil(encoded.length / 4) * 4, '=');
}

/** Reads a progress stream to its end; an `error` message in it rejects; silence for `inactivityMs` too. */
async function readProgress(
  calls: EngineCalls,
  req: EngineRequest,
  onProgress: ((m: ProgressMessage) => void) | undefined,
  inactivityMs: number,
): Promise<void> {
  const abort = new AbortController();
  // The engine answers a pull's headers only once it has reached the registry.
  const res = await calls.conn.stream({ ...req, timeoutMs: inactivityMs }, abort.signal);
  let idle = setTimeout(() => abort.abort(), inactivityMs);
  try {
    for await (const message of ndjson<ProgressMessage>(res)) {
      clearTimeout(idle);
      idle = setTimeout(() => abort.abort(), inactivityMs);
      const error = message.error ?? message.errorDetail?.message;
      // The engine's own refusal, reported inside the stream (its status was already 200).
      if (error) throw new DockerEngineError(req.doing, 200, error);
      onProgress?.(message);
    }
  } catch (err) {
    if (abort.signal.aborted)
      throw new Error(`${req.doing}: no progress for ${Math.round(inactivityMs / 1000)} s; gave up`, { cause: err });
    throw err;
  } finally {
    clearTimeout(idle);
    abort.abort();
  }
}
