import type { FastifyBaseLogger } from 'fastify';

type Bindings = Record<string, unknown>;
type LogFn = FastifyBaseLogger['info'];
const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;

/**
 * A request's logger (`request.log`) that makes its child logger (bound to the request id) only
 * when a line is written at an enabled level. Fastify otherwise builds a pino child for every
 * request, with its bindings serialized and redacted: about 5% of the serving thread's busy time
 * on `/run` when the level is `warn` and almost no request ever logs.
 */
export class RequestLogger {
  #child: FastifyBaseLogger | null = null;
  declare fatal: LogFn;
  declare error: LogFn;
  declare warn: LogFn;
  declare info: LogFn;
  declare debug: LogFn;
  declare trace: LogFn;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: object,
  ) {}

  /** The real child, made on first use. */
  get logger(): FastifyBaseLogger {
    return (this.#child ??= this.parent.child(this.bindings, this.options));
  }

  /** A level the route sets (Fastify's route `logLevel`), which the child will have once made. */
  get #ownLevel(): string | undefined {
    return (this.options as { level?: string }).level;
  }

  get level(): string {
    return this.#child?.level ?? this.#ownLevel ?? this.parent.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  isLevelEnabled(level: string): boolean {
    const own = this.#child === null ? this.#ownLevel : undefined;
    const values = (this.parent as { levels?: { values?: Record<string, number> } }).levels?.values;
    // a quieter route (worker protocol: `logLevel: 'warn'`) decides without making the child
    if (own !== undefined && values?.[own] !== undefined && values[level] !== undefined)
      return values[level] >= values[own];
    const logger = (this.#child ?? this.parent) as FastifyBaseLogger & { isLevelEnabled?(level: string): boolean };
    return logger.isLevelEnabled ? logger.isLevelEnabled(level) : true;
  }

  silent(): void {}

  child(bindings: Bindings, options?: object): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }
}

for (const level of LEVELS) {
  Object.defineProperty(RequestLogger.prototype, level, {
    value: function (this: RequestLogger, ...args: Parameters<LogFn>) {
      if (this.isLevelEnabled(level)) (this.logger[level])(...args);
    },
    writable: true,
    configurable: true,
  });
}

/** Fastify's `childLoggerFactory`: a lazy child per request (see RequestLogger). */
export function lazyChildLogger(logger: FastifyBaseLogger, bindings: Bindings, options: object): FastifyBaseLogger {
  return new RequestLogger(logger, bindings, options);
}
