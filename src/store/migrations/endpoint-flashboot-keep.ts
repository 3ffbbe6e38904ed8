/**
 * Migration `0025-endpoint-flashboot-keep`: `endpoints.flashboot_keep_s`, how long a FlashBoot
 * endpoint's idle worker is kept suspended (seconds, a Gantry extension; the autoscaler clamps it
 * to `serverless.flashboot.maxKeepMs` at use). Endpoints stored before it keep the 10 minutes
 * every FlashBoot endpoint had.
 */
export const endpointFlashbootKeep = (): string[] => [
  `ALTER TABLE endpoints ADD COLUMN flashboot_keep_s INTEGER NOT NULL DEFAULT 600`,
];
