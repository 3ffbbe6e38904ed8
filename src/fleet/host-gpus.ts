/**
 * A GPU belongs to one live host: its UUID is claimed by the host that reports it (at the join, at
 * a changed capacity), in the transaction that records the host, and a second host reporting it is
 * refused, naming the field and the holder. Two joins at the same moment race on the unique key
 * of `host_gpus`; the loser is refused the same way.
 */
import { ApiError } from '../domain/errors.js';
import { isUniqueViolation } from '../store/database.js';
import type { HostStore } from './host-store.js';

type Tx = Parameters<HostStore['gpuOwners']>[1];

/** GPU UUIDs as `host_gpus` keys them: hex is hex in either case. */
const gpuKeys = (gpus: ReadonlyArray<{ uuid: string }>): string[] => gpus.map((g) => g.uuid.toLowerCase());

/** 400: a GPU the host reports belongs to another host. */
function gpusTaken(field: string, holder: string, uuid?: string): ApiError {
  const what = `${field} ${uuid ? `(${uuid}) ` : ''}is a GPU of ${holder}: a GPU belongs to one host (revoke the old host first if the machine joined before)`;
  return new ApiError('CAPACITY_INVALID', `The host description cannot be real: ${what}.`, { errors: [what] });
}

/** Claims the GPUs for the host in `tx` (replacing what it held): 400 CAPACITY_INVALID when another live host holds one. */
export async function claimGpus(
  hosts: HostStore,
  hostId: string,
  gpus: ReadonlyArray<{ uuid: string }>,
  tx: Tx,
): Promise<void> {
  const keys = gpuKeys(gpus);
  const owners = await hosts.gpuOwners(keys, tx);
  const index = keys.findIndex((key) => {
    const owner = owners.get(key);
    return owner !== undefined && owner !== hostId;
  });
  if (index >= 0)
    throw gpusTaken(`capacity.gpus[${index}].uuid`, `host ${owners.get(keys[index]!)}`, gpus[index]!.uuid);
  await hosts.setHostGpus(hostId, keys, tx);
}

/** Runs a transaction that claims GPUs, turning the race lost to a concurrent claim into the same refusal. */
export async function withGpuClaims<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (isUniqueViolation(err)) throw gpusTaken('capacity.gpus', 'another host joining at the same moment');
    throw err;
  }
}
