/**
 * A webhook delivery's statuses: PENDING until the receiver accepts it (DELIVERED) or the attempts
 * are spent (FAILED). Both ends are final.
 */

const WEBHOOK_DELIVERY_STATUSES = ['PENDING', 'DELIVERED', 'FAILED'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

/** The statuses a delivery ends in. */
export const FINISHED_DELIVERY_STATUSES = ['DELIVERED', 'FAILED'] as const satisfies readonly WebhookDeliveryStatus[];
