/** A problem+json answer of the proxy listener (the pod proxy's and the load balancer's refusals). */
import type { ServerResponse } from 'node:http';
import type { ApiError } from '../domain/errors.js';

/** Answers `err`; an answer already begun is cut instead. `workerId`: the worker it concerns (`X-Runpod-Worker-Id`). */
export function sendProblem(res: ServerResponse, err: ApiError, workerId?: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify(err.toProblem());
  res.writeHead(err.status, {
    ...err.headers,
    ...(workerId === undefined ? {} : { 'x-runpod-worker-id': workerId }),
    'content-type': 'application/problem+json',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(body);
}
