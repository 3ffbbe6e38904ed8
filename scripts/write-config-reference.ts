/** Rewrites the generated reference in docs/configuration.md from src/config-schema.ts (`npm run docs:config`). */
import { readFileSync, writeFileSync } from 'node:fs';
import { configReference, withReference } from '../src/config-reference.js';

const path = new URL('../docs/configuration.md', import.meta.url);
writeFileSync(path, withReference(readFileSync(path, 'utf8'), configReference()));
