/**
 * The Engine API's container calls: create, start, stop, kill, remove, inspect, stats, list, wait,
 * and the container's log, whole or as a stream.
 */
import type { Readable } from 'node:stream';
import { enc, gone, orNull, short, type EngineCalls, type Filters } from './engine-calls.js';
import { DockerEngineError } from './engine-connection.js';
import { decodeLogFrames } from './engine-streams.js';
import type { ContainerCreateBody, ContainerInspect, ContainerStats, ContainerSummary } from './engine-types.js';

export interface CreatedContainer {
  Id: string;
  Warnings: string[] | null;
}

export interface RemoveContainerOptions {
  force?: boolean;
  volumes?: boolean;
}

export interface ListContainersOptions {
  all?: boolean;
  filters?: Filters;
}

export interface WaitOptions {
  condition?: 'not-running' | 'next-exit' | 'removed';
  timeoutMs?: number;
}

/** `sinceMs` in ms epoch, `tail` in lines. */
export interface LogsOptions {
  tail?: number;
  sinceMs?: number;
}

export async function createContainer(
  calls: EngineCalls,
  name: string,
  body: ContainerCreateBody,
): Promise<CreatedContainer> {
  return (
    await calls.conn.json<CreatedContainer>({
      method: 'POST',
      path: '/containers/create',
      query: { name },
      body,
      doing: `creating container "${name}"`,
    })
  ).body;
}

/** Starts it; a container already running is left as it is. */
export async function startContainer(calls: EngineCalls, id: string): Promise<void> {
  await calls.conn.json({
    method: 'POST',
    path: `/containers/${enc(id)}/start`,
    doing: `starting container ${short(id)}`,
  });
}

/** SIGTERM, then SIGKILL after `graceSeconds`; a container already stopped is left as it is. */
export async function stopContainer(calls: EngineCalls, id: string, graceSeconds: number): Promise<void> {
  await calls.conn.json({
    method: 'POST',
    path: `/containers/${enc(id)}/stop`,
    query: { t: graceSeconds },
    timeoutMs: graceSeconds * 1_000 + calls.timeoutMs,
    doing: `stopping container ${short(id)}`,
  });
}

/**
 * Freezes every process of the container (the cgroup freezer): its memory and network stay.
 * A container already paused is left as it is (the engine answers 409, taken as done).
 */
export async function pauseContainer(calls: EngineCalls, id: string): Promise<void> {
  await alreadyDone(
    calls.conn.json({ method: 'POST', path: `/containers/${enc(id)}/pause`, doing: `pausing container ${short(id)}` }),
    /already paused/i,
  );
}

/** Thaws a paused container; one that is not paused is left as it is. */
export async function unpauseContainer(calls: EngineCalls, id: string): Promise<void> {
  await alreadyDone(
    calls.conn.json({
      method: 'POST',
      path: `/containers/${enc(id)}/unpause`,
      doing: `unpausing container ${short(id)}`,
    }),
    /is not paused/i,
  );
}

/** Awaits an engine call whose refusal matching `done` means its effect is there already. */
async function alreadyDone(call: Promise<unknown>, done: RegExp): Promise<void> {
  try {
    await call;
  } catch (err) {
    if (err instanceof DockerEngineError && err.statusCode >= 400 && done.test(err.engineMessage)) return;
    throw err;
  }
}

export async function killContainer(calls: EngineCalls, id: string, signal = 'SIGKILL'): Promise<void> {
  await calls.conn.json({
    method: 'POST',
    path: `/containers/${enc(id)}/kill`,
    query: { signal },
    doing: `killing container ${short(id)}`,
  });
}

/** Answers false when there was no such container. */
export async function removeContainer(
  calls: EngineCalls,
  id: string,
  options: RemoveContainerOptions = {},
): Promise<boolean> {
  return gone(
    calls.conn.json({
      method: 'DELETE',
      path: `/containers/${enc(id)}`,
      query: { force: options.force ?? false, v: options.volumes ?? false },
      doing: `removing container ${short(id)}`,
    }),
  );
}

/** `size`: also the size of its writable layer (`SizeRw`), which the engine computes by walking it. */
export async function inspectContainer(
  calls: EngineCalls,
  id: string,
  options: { size?: boolean } = {},
): Promise<ContainerInspect | null> {
  return orNull(
    calls.conn.json<ContainerInspect>({
      method: 'GET',
      path: `/containers/${enc(id)}/json`,
      ...(options.size ? { query: { size: true } } : {}),
      doing: `inspecting container ${short(id)}`,
    }),
  );
}

/** One reading of a running container's CPU and memory, without the engine's one-second wait; null when it is gone. */
export async function containerStats(calls: EngineCalls, id: string): Promise<ContainerStats | null> {
  const query = { stream: false, 'one-shot': true };
  return orNull(
    calls.conn.json<ContainerStats>({
      method: 'GET',
      path: `/containers/${enc(id)}/stats`,
      query,
      doing: `reading the stats of container ${short(id)}`,
    }),
  );
}

export async function listContainers(
  calls: EngineCalls,
  options: ListContainersOptions = {},
): Promise<ContainerSummary[]> {
  const query = { all: options.all ?? false, filters: options.filters ? JSON.stringify(options.filters) : undefined };
  return (
    await calls.conn.json<ContainerSummary[]>({
      method: 'GET',
      path: '/containers/json',
      query,
      doing: 'listing containers',
    })
  ).body;
}

/** Waits until it is no longer running (or `condition`); no timeout unless given. */
export async function waitContainer(
  calls: EngineCalls,
  id: string,
  options: WaitOptions = {},
): Promise<{ StatusCode: number }> {
  return (
    await calls.conn.json<{ StatusCode: number }>({
      method: 'POST',
      path: `/containers/${enc(id)}/wait`,
      query: { condition: options.condition ?? 'not-running' },
      timeoutMs: options.timeoutMs ?? 2 ** 31 - 1,
      doing: `waiting for container ${short(id)}`,
    })
  ).body;
}

/** Its stdout and stderr interleaved as written; `since` in ms epoch, `tail` in lines. */
export async function containerLogs(calls: EngineCalls, id: string, options: LogsOptions = {}): Promise<string> {
  const res = await calls.conn.stream({
    method: 'GET',
    path: `/containers/${enc(id)}/logs`,
    query: {
      stdout: true,
      stderr: true,
      tail: options.tail ?? 'all',
      since: options.sinceMs !== undefined ? (options.sinceMs / 1000).toFixed(3) : undefined,
    },
    doing: `reading the logs of container ${short(id)}`,
  });
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return decodeLogFrames(Buffer.concat(chunks))
    .map((f) => f.data.toString('utf8'))
    .join('');
}

/**
 * Its stdout and stderr as a stream (framed unless the container has a TTY), each line prefixed
 * with its RFC3339Nano time; with `follow`, open until the container stops or `signal` aborts.
 */
export async function containerLogStream(
  calls: EngineCalls,
  id: string,
  options: LogsOptions & { follow: boolean },
  signal: AbortSignal,
): Promise<Readable> {
  return calls.conn.stream(
    {
      method: 'GET',
      path: `/containers/${enc(id)}/logs`,
      query: {
        stdout: true,
        stderr: true,
        timestamps: true,
        follow: options.follow,
        tail: options.tail ?? 'all',
        since: options.sinceMs !== undefined ? (options.sinceMs / 1000).toFixed(3) : undefined,
      },
      doing: `reading the logs of container ${short(id)}`,
    },
    signal,
  );
}
