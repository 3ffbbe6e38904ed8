/**
 * Where the process runtime keeps volume data: a process cannot mount, so a volume is a folder of
 * the data dir that the instance is told about (instance-env.ts).
 * - a pod's persistent volume: `<dataDir>/pods/<instance id>/persistent` (goes with `remove()`);
 * - a network volume: `<dataDir>/volumes/<volume id>` (goes with `removeVolume()`).
 */
import { join } from 'node:path';
import type { VolumeSource } from '../runtime.js';

/**
 * `name` as one folder name. Ids are the platform's own, never a tenant's, but these folders are
 * deleted recursively: an id that could climb out of its folder is refused outright.
 */
function folderName(what: string, name: string): string {
  if (name === '' || name === '.' || name === '..' || /[/\\\0]/.test(name))
    throw new Error(`${what} ${JSON.stringify(name)} cannot name a folder`);
  return name;
}

export const podFolderOf = (dataDir: string, instanceId: string): string =>
  join(dataDir, 'pods', folderName('instance id', instanceId));
export const networkVolumeFolderOf = (dataDir: string, volumeId: string): string =>
  join(dataDir, 'volumes', folderName('volume id', volumeId));

export function volumeFolderOf(dataDir: string, instanceId: string, volume: VolumeSource): string {
  return volume.kind === 'persistent'
    ? join(podFolderOf(dataDir, instanceId), 'persistent')
    : networkVolumeFolderOf(dataDir, volume.volumeId);
}
