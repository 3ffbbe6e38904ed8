import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { HealthProbe, ImageSpec } from '../../domain/image-spec.js';
import type { InstanceSpec } from '../runtime.js';
import type { ProbeTarget } from '../health-probe.js';
import { screenInstanceEnv, type EnvScreen } from './env-policy.js';
import { INSTANCE_PUBLIC_IP, instanceEnv } from './instance-env.js';
import { launchProcess, type LaunchedProcess } from './launch-process.js';
import { instanceDirOf, reapOrphan } from './orphans.js';
import { capLog } from './output-log.js';
import { splitArgs } from '../split-args.js';
import { podFolderOf, volumeFolderOf } from './volume-folders.js';

export interface SpawnOptions {
  /** the instance's folder is `<dataDir>/instances/<id>` */
  dataDir: string;
  logger: Logger;
  /** SIGTERM → SIGKILL grace for a leftover process of the same id */
  stopGraceMs: number;
  /** output.log is rotated first when it is already past this size */
  maxLogBytes: number;
  /** Which of the env rules screen the tenant's env (env-policy.ts). @default 'all' */
  envScreen?: EnvScreen;
}

/** A spawned instance process, and what its supervision needs to know. */
export interface SpawnedInstance {
  launched: LaunchedProcess;
  argv: string[];
  cwd: string;
  logPath: string;
  /** What its health check probes; null when its image has none. */
  probe: ProbeTarget | null;
}

/**
 * Spawns the process of an instance of a mapped image: its command line (the image's command, then
 * the instance's args) and health-check target checked first, its folder and its volumes' folders
 * created, a process a previous server left for the same id killed, its output.log capped, the
 * tenant's env screened (env-policy.ts). Every refusal reads `cannot start image "<image>": <why>`.
 */
export async function spawnInstance(
  spec: InstanceSpec,
  image: ImageSpec,
  options: SpawnOptions,
): Promise<SpawnedInstance> {
  const { dataDir, logger } = options;
  const cannot = (why: string): Error => new Error(`cannot start image "${spec.image}": ${why}`);

  if (image.tenantArgs === false && spec.args.trim() !== '')
    throw cannot(
      `its mapping takes no args (tenantArgs: false) and this instance sets args "${spec.args}"; remove them`,
    );
  let argv: string[];
  try {
    argv = [...image.command, ...splitArgs(spec.args)];
  } catch (err) {
    throw cannot((err as Error).message);
  }
  const [file, ...rest] = argv;
  if (file === undefined || file === '') throw cannot('its command is empty');
  const probe = image.health ? probeTargetOf(image.health, spec) : null;
  if (probe === undefined) {
    const ports = spec.ports.map((p) => `${p.private}/${p.protocol}`).join(', ') || 'none';
    throw cannot(
      `its health check probes port ${image.health?.port}, which this instance does not expose (ports: ${ports})`,
    );
  }

  let volumeFolders: string[];
  try {
    podFolderOf(dataDir, spec.id);
    volumeFolders = spec.volumes.map((volume) => volumeFolderOf(dataDir, spec.id, volume));
  } catch (err) {
    throw cannot((err as Error).message);
  }
  const dir = instanceDirOf(dataDir, spec.id);
  // 0700, as every folder of the data dir (store/data-dir-permissions.ts)
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await reap(spec.id, options);
  for (const [n, volume] of spec.volumes.entries()) {
    try {
      await mkdir(volumeFolders[n]!, { recursive: true, mode: 0o700 });
    } catch (err) {
      throw cannot(
        `cannot create the folder of volume ${volume.path} at ${volumeFolders[n]}: ${(err as Error).message}`,
      );
    }
  }
  const logPath = join(dir, 'output.log');
  await capLog(logPath, options.maxLogBytes).catch(() => false);
  const cwd = image.cwd ?? dir;
  // The API refuses these; env stored before that rule, or reaching here by another path, must
  // still never reach the process. Only the tenant's env is screened; platformEnv is layered over it.
  const screened = screenInstanceEnv(spec.env, image.tenantEnv, options.envScreen);
  if (screened.dropped.length > 0)
    logger.warn(
      { instance: spec.id, image: spec.image, dropped: screened.dropped },
      `dropped env variables the process runtime refuses: ${screened.dropped.join(', ')}`,
    );
  let launched: LaunchedProcess;
  try {
    launched = await launchProcess({
      file,
      args: rest,
      cwd,
      logPath,
      env: instanceEnv(
        { ...spec, env: screened.env },
        { hostEnv: process.env, imageEnv: image.env, instanceDir: dir, volumeFolders },
      ),
      onError: (err) => logger.warn({ err, instance: spec.id }, 'instance process error'),
    });
  } catch (err) {
    throw cannot((err as Error).message);
  }
  return { launched, argv, cwd, logPath, probe };
}

async function reap(id: string, options: SpawnOptions): Promise<void> {
  const killed = await reapOrphan(options.dataDir, id, { graceMs: options.stopGraceMs });
  if (killed)
    options.logger.warn({ instance: id }, 'killed the process a previous server left behind for this instance');
}

/** The host address to probe: the public port bound to the probe's private port; undefined when none is. */
function probeTargetOf(health: HealthProbe, spec: InstanceSpec): ProbeTarget | undefined {
  const binding = spec.ports.find((p) => p.private === health.port);
  if (!binding) return undefined;
  return { type: health.type, host: INSTANCE_PUBLIC_IP, port: binding.public, path: health.path || '/' };
}
