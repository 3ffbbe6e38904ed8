// The web console's build (docs/console.md): `npm run build` runs `vite build -c console/vite.config.ts`
// after tsc, writing dist/console, which the server serves at /console (src/http/routes/console.ts).
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  base: '/console/',
  // Preact's automatic JSX runtime, without a framework plugin (no hot reload needed to build).
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  resolve: { alias: { react: 'preact/compat', 'react-dom': 'preact/compat' } },
  build: {
    outDir: '../dist/console',
    emptyOutDir: true,
    target: 'es2022',
    // No inline polyfill script: the server's CSP allows scripts from its own origin only.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: false,
    chunkSizeWarningLimit: 200,
  },
  server: { proxy: { '/v2': 'http://127.0.0.1:8080', '/v1': 'http://127.0.0.1:8080' } },
});
