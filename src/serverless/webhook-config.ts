/** Webhook delivery (config file `serverless.webhooks`; the meaning and default of each: docs/configuration.md). */
export interface WebhookConfig {
  timeoutMs: number;
  retryDelayMs: number;
  maxAttempts: number;
  pollIntervalMs: number;
  concurrency: number;
  perAccountConcurrency: number;
  perReceiverConcurrency: number;
  privateAddresses: 'auto' | 'allow' | 'deny';
}

/** The schema's defaults, for a dispatcher built without a config (tests). */
export const DEFAULT_WEBHOOK_CONFIG: WebhookConfig = {
  timeoutMs: 10_000,
  retryDelayMs: 10_000,
  maxAttempts: 3,
  pollIntervalMs: 1_000,
  concurrency: 16,
  perAccountConcurrency: 4,
  perReceiverConcurrency: 2,
  privateAddresses: 'auto',
};
