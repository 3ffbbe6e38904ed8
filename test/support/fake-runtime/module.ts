/**
 * The test-only fake runtime's module (fake-runtime.ts: instances in memory, nothing runs), written
 * as docs/runtimes.md "Adding a runtime" says: this folder, and one line in the test-only registry
 * (test/support/runtimes.ts). No config selects it (the config schema lists the runtimes of a
 * build); the service tests hand its runtime to the server (`overrides.runtime`).
 */
import { fixedHosts } from '../../../src/runtime/host-feed.js';
import type { RuntimeModule } from '../../../src/runtime/runtime-module.js';
import { FakeRuntime } from './fake-runtime.js';

export const fakeRuntime: RuntimeModule = {
  kind: 'fake',
  capabilities: {
    liveHosts: false,
    gpuPinningByUuid: false,
    entrypointOverride: false,
    httpThroughAgent: false,
    // A stopped instance is kept until removed, as a container runtime keeps a stopped container.
    suspendResume: true,
    imagePrePull: false,
    hostFirewall: false,
  },
  hostSource: 'declared',
  configSection: null,
  imagesAreCommands: false,
  // Nothing runs, so nothing reaches anything; a test that needs a runtime's rules stands the fake in for it.
  isolation: () => ({ ownNetworks: true, hardening: true, acceptSharedHost: false, acceptHostNetwork: false }),
  create: async ({ config }) => ({ runtime: new FakeRuntime(), hosts: fixedHosts(config.fleet) }),
};
