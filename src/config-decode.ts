/**
 * Reads raw config (the file, with the environment and flags laid over it) against the TypeBox
 * schema of config-schema.ts: coerces strings where the schema wants numbers or booleans (every
 * environment variable is a string), fills defaults, reports keys the schema does not know,
 * validates with TypeBox, and decodes (clamps, floors). Every error names the exact path.
 */
import { Kind, type TSchema } from '@sinclair/typebox';
import { Value, ValueErrorType } from '@sinclair/typebox/value';
import { fail, isObj, type Obj } from './config-values.js';

/** The options config-schema.ts adds to TypeBox's: what the loader and the reference read. */
export interface ConfigAnnotations {
  /** The environment variable that sets this key (it wins over the file). */
  env?: string;
  /** The environment variable holds a comma-separated list. */
  envList?: boolean;
  /** The default, in words, when it is computed rather than fixed (the reference shows it). */
  defaultText?: string;
  /** What the value must be, replacing the sentence made from the schema (`must be …`). */
  mustBe?: string;
  /** The sentence for a value out of the schema's minimum/maximum (`must be at most …`). */
  bounds?: string;
}

type Node = TSchema & ConfigAnnotations & Record<string, unknown>;

/** `a.b[1]`, `images["w:1"]` from a path of keys. */
export function pathLabel(keys: readonly (string | number)[]): string {
  let out = '';
  for (const key of keys) {
    if (typeof key === 'number' || /^\d+$/.test(key)) out += `[${key}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(key)}]`;
  }
  return out;
}

/** The non-null branch of `X | null`, else the node itself. */
function nonNull(node: Node): Node {
  if (node[Kind] !== 'Union') return node;
  const rest = (node.anyOf as Node[]).filter((n) => n[Kind] !== 'Null');
  return rest.length === 1 ? rest[0]! : node;
}

/** Every environment variable the schema names, with its path. */
export function envBindings(schema: TSchema): Array<{ path: string[]; node: Node }> {
  const out: Array<{ path: string[]; node: Node }> = [];
  const visit = (node: Node, path: string[]): void => {
    if (node.env) out.push({ path, node });
    if (node[Kind] === 'Object')
      for (const [key, child] of Object.entries(node.properties as Record<string, Node>)) visit(child, [...path, key]);
  };
  visit(schema, []);
  return out;
}

function setAt(root: Obj, path: readonly string[], value: unknown): boolean {
  let at: Obj = root;
  for (const key of path.slice(0, -1)) {
    if (at[key] === undefined || at[key] === null) at[key] = {};
    const next = at[key];
    if (!isObj(next)) return false; // malformed section: validation names it
    at = next;
  }
  at[path[path.length - 1]!] = value;
  return true;
}

const coercedBool: Record<string, boolean> = { true: true, '1': true, false: false, '0': false };

/** Coerce strings, drop nulls, fill defaults and collect unknown keys, in place of a copy. */
function prepare(node: Node, value: unknown, path: string[], warnings: string[]): unknown {
  const kind = nonNull(node)[Kind];
  if (value === null && kind !== 'Unknown') value = undefined;
  if (value === undefined && 'default' in node) value = structuredClone(node.default);
  if (kind === 'Object') {
    if (value === undefined) value = {};
    if (!isObj(value)) return value;
    const properties = nonNull(node).properties as Record<string, Node>;
    const out: Obj = {};
    for (const [key, child] of Object.entries(value)) {
      if (!(key in properties))
        warnings.push(
          `unknown config key "${pathLabel([...path, key])}" is ignored (known here: ${Object.keys(properties).join(', ')})`,
        );
      else out[key] = child;
    }
    for (const [key, child] of Object.entries(properties)) {
      const prepared = prepare(child, out[key], [...path, key], warnings);
      if (prepared === undefined) delete out[key];
      else out[key] = prepared;
    }
    return out;
  }
  if (typeof value !== 'string') return value;
  if (kind === 'Number' || kind === 'Integer') {
    const n = value.trim() === '' ? NaN : Number(value);
    return Number.isFinite(n) ? n : value;
  }
  if (kind === 'Boolean') return value === '' ? structuredClone(node.default) : (coercedBool[value] ?? value);
  return value;
}

/** `a non-negative number`, `one of a, b`, `a mapping { x, y }`: what a node accepts, in words. */
export function describe(node: Node): string {
  if (node.mustBe) return node.mustBe;
  const inner = nonNull(node);
  if (inner !== node) return describe(inner);
  switch (node[Kind]) {
    case 'Number':
    case 'Integer': {
      const noun = node[Kind] === 'Integer' ? 'integer' : 'number';
      const { minimum, maximum } = node as { minimum?: number; maximum?: number };
      if (minimum !== undefined && maximum !== undefined)
        return `a${noun === 'integer' ? 'n' : ''} ${noun} from ${minimum} to ${maximum}`;
      // a further minimum has its own sentence (`bounds`) when the value is a number below it
      return minimum !== undefined && minimum >= 0 ? `a non-negative ${noun}` : `a ${noun}`;
    }
    case 'Boolean':
      return 'true or false';
    case 'String':
      return 'a string';
    case 'Literal':
      return JSON.stringify(node.const);
    case 'Union': {
      const branches = node.anyOf as Node[];
      if (branches.every((b) => b[Kind] === 'Literal'))
        return `one of ${branches.map((b) => String(b.const)).join(', ')}`;
      return branches.map(describe).join(', or ');
    }
    case 'Object':
      return `a mapping { ${Object.keys(node.properties as Obj).join(', ')} }`;
    case 'Array':
      return `a list of ${describe(node.items as Node).replace(/^an? /, '')}s`;
    case 'Tuple':
      return `a list of ${(node.items as Node[]).length}: [${(node.items as Node[]).map(describe).join(', ')}]`;
    default:
      return 'valid';
  }
}

const BOUNDS = new Set([
  ValueErrorType.NumberMinimum,
  ValueErrorType.NumberMaximum,
  ValueErrorType.IntegerMinimum,
  ValueErrorType.IntegerMaximum,
]);

/**
 * Validate `raw` (the file's mapping) against `schema`, the environment laid over it, and return
 * the decoded value and the unknown-key warnings. Throws `Invalid configuration: <path> must be …`.
 * @param overrides values that win over the environment (command-line flags), by path
 */
export function decodeConfig<T extends TSchema>(
  schema: T,
  raw: Obj,
  env: Record<string, string | undefined>,
  overrides: Array<{ path: string[]; value: unknown }> = [],
): { value: unknown; warnings: string[]; fromEnv: Map<string, string> } {
  const input = structuredClone(raw);
  const fromEnv = new Map<string, string>();
  for (const { path, node } of envBindings(schema)) {
    const text = env[node.env!];
    if (text === undefined || text === '') continue;
    const value = node.envList
      ? text
          .split(',')
          .map((e) => e.trim())
          .filter((e) => e !== '')
      : text;
    if (setAt(input, path, value)) fromEnv.set(pathLabel(path), node.env!);
  }
  for (const { path, value } of overrides)
    if (value !== undefined && setAt(input, path, value)) fromEnv.delete(pathLabel(path));
  const warnings: string[] = [];
  const prepared = prepare(schema, input, [], warnings);
  const error = Value.Errors(schema, prepared).First();
  if (error) {
    const keys = error.path
      .split('/')
      .slice(1)
      .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
    const label = pathLabel(keys) || 'the config file';
    const node = error.schema as Node;
    const sentence = BOUNDS.has(error.type) ? boundSentence(error.type, node) : describe(node);
    const source = fromEnv.get(label);
    fail(`${label} must be ${sentence}${source ? ` (from ${source})` : ''}`);
  }
  return { value: Value.Decode(schema, prepared), warnings, fromEnv };
}

function boundSentence(type: ValueErrorType, node: Node): string {
  const { minimum, maximum } = node as { minimum?: number; maximum?: number };
  const below = type === ValueErrorType.NumberMinimum || type === ValueErrorType.IntegerMinimum;
  if (below && minimum === 0) return describe(node);
  if (node.bounds) return node.bounds;
  if (minimum !== undefined && maximum !== undefined) return describe(node);
  return below ? `at least ${minimum}` : `at most ${maximum}`;
}
