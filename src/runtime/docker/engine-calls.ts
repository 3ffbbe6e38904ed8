/**
 * What the Engine API calls (engine-images.ts, engine-containers.ts, engine-volumes.ts,
 * engine-networks.ts) share: the connection they are made over (engine-connection.ts), and how an
 * answer is read when the object may not exist.
 */
import { isNotFound, type EngineConnection } from './engine-connection.js';

/** The connection a call is made over, and its default timeout (a call may need longer). */
export interface EngineCalls {
  conn: EngineConnection;
  timeoutMs: number;
}

/** `{ label: ['gantry.namespace=x'] }` and the like, as `GET …/json?filters=` takes them. */
export type Filters = Record<string, string[]>;

/** A name or id as one segment of a request's path. */
export const enc = encodeURIComponent;

/** A container's id as error messages show it: its first 12 digits, or its name quoted. */
export const short = (id: string): string => (/^[0-9a-f]{64}$/.test(id) ? id.slice(0, 12) : `"${id}"`);

/** The answer's body; null when the engine has no such object (404). */
export async function orNull<T>(call: Promise<{ body: T }>): Promise<T | null> {
  try {
    return (await call).body;
  } catch (err) {
    if (isNotFound(err)) return null;
    throw err;
  }
}

/** Whether the object was there to remove: false when the engine had no such object (404). */
export async function gone(call: Promise<unknown>): Promise<boolean> {
  try {
    await call;
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}
