// The runtimes only tests register, one line each (docs/runtimes.md "Adding a runtime"):
// src/runtime/registry.ts lists the runtimes of a build, this file the test-only ones.
import { registerRuntime } from '../../src/runtime/registry.js';
import { fakeRuntime } from './fake-runtime/module.js';

registerRuntime(fakeRuntime);
