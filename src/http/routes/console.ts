/**
 * The web console (docs/console.md): the files `vite build` wrote to dist/console, served at
 * /console from memory. They are read once when the app is built (a few hundred KiB), so a request
 * costs no file system access and nothing outside that folder can ever be named by a URL. The
 * console is an API client like any other: these routes are public (they hold no data), and every
 * call the page makes carries the user's API key.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { dirname, extname, join, relative, sep } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { pathParam, type TypedApp } from '../type-provider.js';
import { ApiError } from '../../domain/errors.js';

/**
 * dist/console of this package, whether the server runs from dist/http, from src/http (tsx) or
 * from the one-file bundle in dist/cli: the nearest folder above this module holding package.json.
 */
function packageConsoleDir(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) || dirname(dir) === dir) return join(dir, 'dist', 'console');
  }
}
const defaultConsoleDir = packageConsoleDir(import.meta.dirname);

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

/**
 * Scripts, styles and connections only from this origin; no inline script, no plugin, no framing.
 * Styles set through the DOM (`element.style`, as Preact and uPlot do) are not inline styles in
 * CSP's sense and need no `'unsafe-inline'`.
 */
const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

interface ConsoleFile {
  body: Buffer;
  /** The body gzipped once at load, when that is smaller (scripts, styles, HTML). */
  gzip: Buffer | null;
  type: string;
  cacheControl: string;
  etag: string;
}

/** Vite's hashed file names (`assets/index-B2x9_aQ1.js`) never change content: cache them for a year. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

function readConsoleFiles(dir: string): Map<string, ConsoleFile> | null {
  let index: Buffer;
  try {
    index = readFileSync(join(dir, 'index.html'));
  } catch {
    return null;
  }
  const files = new Map<string, ConsoleFile>();
  const add = (path: string, body: Buffer) => {
    const rel = relative(dir, path).split(sep).join('/');
    const type = CONTENT_TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream';
    const hashed = rel.startsWith('assets/');
    const compressible = /^(text\/|image\/svg|application\/json)/.test(type) && body.length > 1024;
    const gzip = compressible ? gzipSync(body, { level: 9 }) : null;
    files.set(rel, {
      body,
      gzip: gzip !== null && gzip.length < body.length ? gzip : null,
      type,
      cacheControl: hashed ? IMMUTABLE : 'no-cache',
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
    });
  };
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile() && statSync(path).size <= 16 * 1024 * 1024) add(path, readFileSync(path));
    }
  };
  walk(dir);
  add(join(dir, 'index.html'), index);
  return files;
}

const wantsHtml = (request: FastifyRequest): boolean => {
  const accept = request.headers.accept;
  return typeof accept === 'string' && /(^|,)\s*text\/html\s*(;|,|$)/i.test(accept);
};

export function consoleRoutes(app: TypedApp, options: { dir?: string } = {}): void {
  const dir = options.dir ?? defaultConsoleDir;
  const files = readConsoleFiles(dir);
  const notBuilt = () =>
    new ApiError(
      'ROUTE_NOT_FOUND',
      'The web console is not built in this installation: run `npm run build` (npm ci does it) to write dist/console.',
    );

  const send = (request: FastifyRequest, reply: FastifyReply, file: ConsoleFile) => {
    void reply
      .header('content-type', file.type)
      .header('cache-control', file.cacheControl)
      .header('etag', file.etag)
      .header('content-security-policy', CONSOLE_CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('x-frame-options', 'DENY');
    if (file.gzip !== null) void reply.header('vary', 'accept-encoding');
    if (request.headers['if-none-match'] === file.etag) return reply.code(304).send();
    const acceptEncoding = request.headers['accept-encoding'];
    if (file.gzip !== null && typeof acceptEncoding === 'string' && /\bgzip\b/i.test(acceptEncoding))
      return reply.header('content-encoding', 'gzip').send(file.gzip);
    return reply.send(file.body);
  };

  const route = { config: { public: true }, schema: { hide: true } } as const;

  // A browser opening the server's address lands on the console; API clients keep the 404 problem.
  app.get('/', route, async (request, reply) => {
    if (!wantsHtml(request)) return reply.callNotFound();
    return reply.redirect('/console/', 302);
  });

  app.get('/console', route, async (request, reply) => {
    if (files === null) throw notBuilt();
    return send(request, reply, files.get('index.html')!);
  });

  app.get('/console/*', route, async (request, reply) => {
    if (files === null) throw notBuilt();
    const path = pathParam(request, '*') ?? '';
    const file = files.get(path === '' ? 'index.html' : path);
    if (file !== undefined) return send(request, reply, file);
    // A page address under /console (a link someone kept) opens the app; a missing asset is a 404.
    if (!path.startsWith('assets/') && !extname(path) && wantsHtml(request))
      return send(request, reply, files.get('index.html')!);
    throw new ApiError('ROUTE_NOT_FOUND', `No console file ${path.slice(0, 200)}.`);
  });
}
