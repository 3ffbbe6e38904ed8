import type { FastifyInstance } from 'fastify';
import { ApiError } from '../domain/errors.js';

/**
 * Whether the server holds the state its answers come from: set by the composition root once the
 * runtime's instances are adopted and reconciled, unset again when it starts to stop.
 */
export class Readiness {
  #state: 'starting' | 'ready' | 'stopping' = 'starting';
  #step = 'starting';

  get ready(): boolean {
    return this.#state === 'ready';
  }

  /** What the start is doing now (named in the 503s' detail). */
  starting(step: string): void {
    if (this.#state === 'starting') this.#step = step;
  }

  markReady(): void {
    if (this.#state === 'starting') this.#state = 'ready';
  }

  markStopping(): void {
    this.#state = 'stopping';
  }

  /** The 503 a request that needs the state answers now; null once ready. */
  refusal(): ApiError | null {
    if (this.#state === 'ready') return null;
    const detail =
      this.#state === 'stopping'
        ? 'The server is shutting down; another replica, or this one once restarted, answers.'
        : `The server is starting (step: ${this.#step}): pod, worker and job state is served once the runtime's instances are adopted. Retry shortly; GET /readyz answers 200 then.`;
    return new ApiError('UNAVAILABLE', detail, { headers: { 'retry-after': '1' } });
  }
}

/** Routes that hold no adopted state: liveness, readiness, the API descriptions and the console's files. */
const servedWhileStarting = (url: string | undefined): boolean =>
  url === undefined ||
  url === '/healthz' ||
  url === '/readyz' ||
  url === '/v2/openapi.json' ||
  url === '/v1/openapi.json' ||
  url === '/' ||
  url === '/console' ||
  url.startsWith('/console/') ||
  url === '/docs' ||
  url.startsWith('/docs/');

/**
 * Before the server is ready every other request answers 503 problem+json with Retry-After, never a
 * status read before adoption could correct it; `/readyz` says which. Without a `readiness` (an app
 * built by a test over services it drives itself) the app is always ready.
 */
export function registerReadiness(app: FastifyInstance, readiness: Readiness | undefined): void {
  app.get('/readyz', { config: { public: true }, schema: { hide: true } }, async () => {
    const refusal = readiness?.refusal();
    if (refusal) throw refusal;
    return { status: 'ready' };
  });
  if (!readiness) return;
  app.addHook('onRequest', (request, _reply, done) => {
    if (readiness.ready || servedWhileStarting(request.routeOptions.url)) return done();
    done(readiness.refusal() ?? undefined);
  });
}
