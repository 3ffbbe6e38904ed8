/**
 * Upper bounds on sizes the spec leaves open. Each fits a 32-bit integer column (PostgreSQL's
 * INTEGER): a larger number used to reach the store and fail there as a 500.
 */

/** Largest container disk, pod persistent mount or template volume, GB (10 TB). */
export const MAX_DISK_GB = 10_000;
