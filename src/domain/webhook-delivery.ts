/**
 * A webhook delivery's statuses: PENDING until the receiver accepts it (DELIVERED) or the attempts
 * are spent (FAILED). Both ends are final.
 */

export type WebhookDeliveryStatus = 'PENDING' | 'DELIVERED' | 'FAILED';

/** The statuses a delivery ends in. */
export const FINISHED_DELIVERY_STATUSES = ['DELIVERED', 'FAILED'] as const satisfies readonly WebhookDeliveryStatus[];
