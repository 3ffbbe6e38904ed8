/**
 * The process runtime's section of the config, `runtime.process`: its keys, defaults and
 * environment variables (composed into the `runtime` section by ../runtime-config.ts).
 */
import { Type } from '@sinclair/typebox';
import { amount, flag } from '../../config-fields.js';

export const ProcessRuntimeSchema = Type.Object({
  allowMultipleAccounts: flag(
    false,
    "Let the process runtime serve more than one account. It isolates nothing (an instance is a process of the server's own user, on the host's network), so by default the server refuses to start with a second account, and refuses to create one, while it uses this runtime. With it, a tenant's env is screened of application settings too (JUPYTER_*, TMPDIR, proxies), not only of what changes which code runs (docs/security.md).",
    { env: 'GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT' },
  ),
  orphanGraceMs: amount(
    30_000,
    'How long after the server died without closing (kill -9, a crash) its process instances are stopped by its watchdog; a server started again on the same data dir within it stops them at once.',
    { env: 'GANTRY_PROCESS_ORPHAN_GRACE_MS' },
  ),
});
