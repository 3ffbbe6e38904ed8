/**
 * Where the process runtime keeps volume data: a process cannot mount, so a volume is a folder of
 * the data dir that the instance is told about (instance-env.ts).
 * - a pod's persistent volume: `<dataDir>/pods/<instance id>/persistent` (goes with `remove()`);
 * - a network volume: `<dataDir>/volumes/<volume id>` (goes with `removeVolume()`).
 */
import { join } from 'node:path';
import type { VolumeSource } from '../runtime.js';

export const podFolderOf = (dataDir: string, instanceId: string): string => join(dataDir, 'pods', instanceId);
export const networkVolumeFolderOf = (dataDir: string, volumeId: string): string => join(dataDir, 'volumes', volumeId);

export function volumeFolderOf(dataDir: string, instanceId: string, volume: VolumeSource): string {
  return volume.kind === 'persistent' ? join(podFolderOf(dataDir, instanceId), 'persistent') : networkVolumeFolderOf(dataDir, volume.volumeId);
}
