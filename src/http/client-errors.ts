import type { Duplex } from 'node:stream';
import { maxHeaderSize } from 'node:http';
import { ApiError } from '../domain/errors.js';

/** The request limits a client-error answer quotes. */
export interface ClientErrorLimits {
  requestTimeoutMs: number;
  headersTimeoutMs: number;
}

/** Parser errors about how a body is framed, rather than about the request line or headers. */
const FRAMING = new Set([
  'HPE_INVALID_CHUNK_SIZE',
  'HPE_INVALID_TRANSFER_ENCODING',
  'HPE_UNEXPECTED_CONTENT_LENGTH',
  'HPE_INVALID_CONTENT_LENGTH',
  'HPE_CHUNK_EXTENSIONS_OVERFLOW',
  'HPE_INVALID_EOF_STATE',
]);
const REQUEST_LINE = new Set(['HPE_INVALID_METHOD', 'HPE_INVALID_URL', 'HPE_INVALID_VERSION', 'HPE_INVALID_CONSTANT']);

/** The problem for an error Node's HTTP parser or its request timers raised, or null when nothing can be answered. */
export function clientErrorProblem(code: string | undefined, limits: ClientErrorLimits): ApiError | null {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return new ApiError(
      'REQUEST_TIMEOUT',
      `The request was not received in time (headers within ${limits.headersTimeoutMs} ms, the whole request within ${limits.requestTimeoutMs} ms); the connection is closed.`,
    );
  if (code === 'HPE_HEADER_OVERFLOW')
    return new ApiError(
      'HEADERS_TOO_LARGE',
      `The request line and headers exceed the server's limit of ${maxHeaderSize} bytes.`,
    );
  if (code === undefined || !code.startsWith('HPE_')) return null;
  if (FRAMING.has(code))
    return new ApiError(
      'BAD_REQUEST',
      `The request body is not framed correctly (chunked encoding or Content-Length): ${code}.`,
    );
  if (REQUEST_LINE.has(code))
    return new ApiError('BAD_REQUEST', `The request line is malformed (method, target or HTTP version): ${code}.`);
  return new ApiError('BAD_REQUEST', `The request is not valid HTTP/1.1: ${code}.`);
}

/** A whole HTTP/1.1 response carrying `problem`, closing the connection. */
export function rawProblemResponse(problem: ApiError): string {
  const body = JSON.stringify(problem.toProblem());
  return (
    `HTTP/1.1 ${problem.status} ${problem.title}\r\nContent-Type: application/problem+json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

/**
 * The listeners' `clientError` handler: errors Node raises before a request reaches Fastify (a
 * request past its timeout, headers too large, a malformed request line, bad chunking) are
 * answered as problem+json like every other error, then the connection is closed — its stream
 * can no longer be trusted to be at a request boundary.
 */
export function answerClientError(limits: ClientErrorLimits) {
  return (err: Error & { code?: string }, socket: Duplex): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const problem = clientErrorProblem(err.code, limits);
    // A response already under way on this connection (a pipelined request) cannot be interrupted by another.
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
    if (problem && socket.writable && !inFlight?.headersSent) socket.write(rawProblemResponse(problem));
    socket.destroy();
  };
}
