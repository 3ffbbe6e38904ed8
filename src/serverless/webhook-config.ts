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
