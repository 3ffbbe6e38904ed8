/**
 * docs/configuration.md's reference, written from the schema (config-schema.ts), so the docs list
 * exactly the keys the server reads. `npm run docs:config` rewrites it; config-reference.test.ts
 * fails when the two differ.
 */
import { Kind, type TSchema } from '@sinclair/typebox';
import { describe, pathLabel, type ConfigAnnotations } from './config-decode.js';
import { ConfigFileSchema } from './config-schema.js';

type Node = TSchema &
  ConfigAnnotations & { description?: string; default?: unknown; properties?: Record<string, Node> };

const REFERENCE_START =
  '<!-- config reference: generated from src/config-schema.ts by `npm run docs:config`; do not edit by hand -->';
const REFERENCE_END = '<!-- end of config reference -->';

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const code = (s: string): string => `\`${s}\``;

function defaultOf(node: Node): string {
  if (node.defaultText) return node.defaultText;
  if (!('default' in node)) return 'none';
  return code(JSON.stringify(node.default));
}

/** One table per mapping of the schema, the top level first, each nested mapping after its parent. */
export function configReference(schema: TSchema = ConfigFileSchema): string {
  const out: string[] = [];
  const visit = (node: Node, path: string[]): void => {
    const properties = Object.entries(node.properties ?? {});
    const leaves = properties.filter(([, child]) => child[Kind] !== 'Object');
    const heading = path.length === 0 ? 'Top level' : code(pathLabel(path));
    out.push(`### ${heading}`, '');
    if (node.description) out.push(node.description, '');
    if (leaves.length > 0) {
      out.push('| key | value | default | environment | meaning |', '|---|---|---|---|---|');
      for (const [key, child] of leaves) {
        const { minimum, maximum } = child as { minimum?: number; maximum?: number };
        const value =
          child[Kind] === 'Unknown'
            ? 'see meaning'
            : minimum !== undefined && minimum > 0 && maximum === undefined
              ? `a number of at least ${minimum}`
              : describe(child);
        out.push(
          `| ${code(pathLabel([...path, key]))} | ${cell(value)} | ${cell(defaultOf(child))} | ${child.env ? code(child.env) : ''} | ${cell(child.description ?? '')} |`,
        );
      }
      out.push('');
    }
    const sections = properties.filter(([, child]) => child[Kind] === 'Object');
    if (sections.length > 0 && leaves.length === 0 && path.length > 0)
      out.push(`Holds ${sections.map(([key]) => code(pathLabel([...path, key]))).join(', ')}.`, '');
    for (const [key, child] of sections) visit(child, [...path, key]);
  };
  visit(schema, []);
  return out.join('\n').trimEnd();
}

/** `text` (docs/configuration.md) with its generated reference replaced by `reference`. */
export function withReference(text: string, reference: string): string {
  const start = text.indexOf(REFERENCE_START);
  const end = text.indexOf(REFERENCE_END);
  if (start < 0 || end < start)
    throw new Error(`docs/configuration.md must hold the markers ${REFERENCE_START} and ${REFERENCE_END}`);
  return `${text.slice(0, start + REFERENCE_START.length)}\n\n${reference}\n\n${text.slice(end)}`;
}
