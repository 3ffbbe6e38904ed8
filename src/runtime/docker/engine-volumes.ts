/** The Engine API's volume calls: create (or find), inspect, remove, list. */
import { enc, gone, orNull, type EngineCalls, type Filters } from './engine-calls.js';
import type { Labels, VolumeInspect } from './engine-types.js';

/** Creates it, or answers the existing one of that name (its labels are not changed then). */
export async function createVolume(calls: EngineCalls, name: string, labels: Labels): Promise<VolumeInspect> {
  return (
    await calls.conn.json<VolumeInspect>({
      method: 'POST',
      path: '/volumes/create',
      body: { Name: name, Labels: labels },
      doing: `creating volume "${name}"`,
    })
  ).body;
}

export async function inspectVolume(calls: EngineCalls, name: string): Promise<VolumeInspect | null> {
  return orNull(
    calls.conn.json<VolumeInspect>({
      method: 'GET',
      path: `/volumes/${enc(name)}`,
      doing: `inspecting volume "${name}"`,
    }),
  );
}

/** Answers false when there was no such volume; a volume in use rejects (409). */
export async function removeVolume(calls: EngineCalls, name: string): Promise<boolean> {
  return gone(calls.conn.json({ method: 'DELETE', path: `/volumes/${enc(name)}`, doing: `removing volume "${name}"` }));
}

export async function listVolumes(calls: EngineCalls, filters: Filters): Promise<VolumeInspect[]> {
  const res = await calls.conn.json<{ Volumes: VolumeInspect[] | null }>({
    method: 'GET',
    path: '/volumes',
    query: { filters: JSON.stringify(filters) },
    doing: 'listing volumes',
  });
  return res.body.Volumes ?? [];
}
