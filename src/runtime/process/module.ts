/**
 * `runtime: process` (the default): instances are child processes of the server, on the hosts the
 * config declares (`fleet.hosts`, a demo fleet on this machine). It keeps nothing apart: an
 * instance is a process of the server's own user, on the host's network.
 */
import { fixedHosts } from '../host-feed.js';
import type { RuntimeModule } from '../runtime-module.js';
import { ProcessRuntimeSchema } from './config.js';

export const processRuntime: RuntimeModule = {
  kind: 'process',
  capabilities: {
    liveHosts: false,
    gpuPinningByUuid: false,
    // An image runs the command its `images` entry maps it to (the spec's args after it); there is no entrypoint to replace.
    entrypointOverride: false,
    httpThroughAgent: false,
    // A stopped process is gone; only its persistent folder is kept.
    suspendResume: false,
    imagePrePull: false,
    hostFirewall: false,
  },
  hostSource: 'declared',
  configSection: { path: 'runtime.process', schema: ProcessRuntimeSchema },
  imagesAreCommands: true,
  isolation: (config) => ({
    ownNetworks: false,
    hardening: false,
    acceptSharedHost: config.runtime.process.allowMultipleAccounts,
    acceptHostNetwork: false,
  }),
  async create({ config, clock, logger }) {
    const { ProcessRuntime } = await import('./process-runtime.js');
    const runtime = new ProcessRuntime({
      images: config.images,
      dataDir: config.dataDir,
      clock,
      logger: logger.child({ component: 'runtime' }),
      stopGraceMs: config.pods.stopGraceMs,
      // one account: refuse only what changes which code runs (docs/security.md)
      envScreen: config.runtime.process.allowMultipleAccounts ? 'all' : 'code',
      orphanGraceMs: config.runtime.process.orphanGraceMs,
      statsIntervalMs: config.runtime.statsIntervalMs,
    });
    return { runtime, hosts: fixedHosts(config.fleet) };
  },
};
