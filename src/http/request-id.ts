import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/**
 * What a client-chosen `x-request-id` may look like to be kept: short, and of characters that
 * cannot break a log line or a header (no newlines, quotes, spaces or control characters).
 */
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The request id: the client's `x-request-id` when it is safe to log and echo (tracing across a
 * proxy keeps working), else a fresh UUID. The id is logged with every line of the request and
 * quoted in 500 details, so an unchecked one could forge log lines or flood them.
 */
export function requestIdOf(req: IncomingMessage): string {
  const sent = req.headers['x-request-id'];
  return typeof sent === 'string' && SAFE_REQUEST_ID.test(sent) ? sent : randomUUID();
}
