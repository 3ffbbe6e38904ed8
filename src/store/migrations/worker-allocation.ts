/**
 * Migration `0008-worker-allocation`: a launched worker's row keeps the allocation it holds on its
 * host (GPU indices, vCPUs, memory, disk; JSON), so a server that restarts while the worker's
 * container runs on can reserve exactly that again and adopt the worker instead of removing it.
 * Rows written before, and rows of workers attached by hand, hold null.
 */
export const workerAllocation = (): string[] => [`ALTER TABLE workers ADD COLUMN allocation TEXT`];
