// The in-memory runtime the service tests use keeps the rules every runtime keeps, so a service
// test cannot pass on behaviour no real runtime has.
import { describeRuntime } from '../src/runtime/runtime-contract.js';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';

describeRuntime('fake', async () => {
  const runtime = new FakeRuntime();
  return {
    runtime,
    images: FakeRuntime.IMAGES,
    adoptsAfterClose: true,
    // It stands in for the Docker runtime in the service tests (dockerApp), entrypoints included.
    entrypointOverride: true,
    reopen: async () => runtime.reopen(),
  };
});
