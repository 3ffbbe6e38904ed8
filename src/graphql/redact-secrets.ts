import { Kind, print, visit, type DocumentNode, type ValueNode } from 'graphql';

/** Input fields and arguments whose values are secrets (registry passwords, access tokens). */
const SECRET_FIELD = /password|secret|token/i;

/**
 * Shorter secrets are redacted only where they stand quoted, as GraphQL and the services print a
 * string value; longer ones also where they stand bare. A bare "a" is a word, not an echo.
 */
const MIN_BARE_SECRET = 8;

/**
 * The texts in which a request's secret values would appear in an error message, each with what
 * replaces it: a string value as graphql-js prints it (JSON-quoted, or in GraphQL string syntax),
 * a number or enum literal as written.
 */
export type SecretForms = ReadonlyMap<string, string>;

const QUOTED = '"[redacted]"';
const BARE = '[redacted]';

function addString(forms: Map<string, string>, value: string, printed?: string): void {
  if (value.length === 0) return;
  forms.set(JSON.stringify(value), QUOTED);
  forms.set(printed ?? print({ kind: Kind.STRING, value }), QUOTED);
  if (value.length >= MIN_BARE_SECRET && !forms.has(value)) forms.set(value, BARE);
}

/** Every scalar below a secret value (a list or object of them is secret throughout). */
function addValue(forms: Map<string, string>, value: unknown): void {
  if (typeof value === 'string') addString(forms, value);
  else if (typeof value === 'number' && Number.isFinite(value)) forms.set(String(value), BARE);
  else if (Array.isArray(value)) for (const v of value) addValue(forms, v);
  else if (typeof value === 'object' && value !== null) for (const v of Object.values(value)) addValue(forms, v);
}

/** Collects the secret forms of a request: values under secret-named fields, inline or in variables. */
export function secretFormsOf(document: DocumentNode | null, variables: Record<string, unknown> | null): SecretForms {
  const forms = new Map<string, string>();
  const secretVariables = new Set<string>();
  const addNode = (node: ValueNode): void => {
    switch (node.kind) {
      case Kind.STRING:
        addString(forms, node.value, print(node));
        break;
      case Kind.INT:
      case Kind.FLOAT:
      case Kind.ENUM:
        forms.set(node.value, BARE);
        break;
      case Kind.LIST:
        node.values.forEach(addNode);
        break;
      case Kind.OBJECT:
        for (const f of node.fields) addNode(f.value);
        break;
      case Kind.VARIABLE:
        secretVariables.add(node.name.value);
        break;
      case Kind.BOOLEAN:
      case Kind.NULL:
        break;
    }
  };
  if (document)
    visit(document, {
      Argument: (node) => void (SECRET_FIELD.test(node.name.value) && addNode(node.value)),
      ObjectField: (node) => void (SECRET_FIELD.test(node.name.value) && addNode(node.value)),
    });
  const walk = (value: unknown, key: string): void => {
    if (SECRET_FIELD.test(key)) addValue(forms, value);
    else if (Array.isArray(value)) value.forEach((v) => walk(v, key));
    else if (typeof value === 'object' && value !== null) for (const [k, v] of Object.entries(value)) walk(v, k);
  };
  for (const [name, value] of Object.entries(variables ?? {})) {
    if (secretVariables.has(name)) addValue(forms, value);
    else walk(value, name);
  }
  return forms;
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Replaces each secret form where it stands as a whole value: a quoted form is delimited by its
 * quotes; a bare one must not sit inside a longer word or number. So a one-letter password hides
 * `"a"` but leaves the a's of every other word alone.
 */
export function redactSecrets(message: string, forms: SecretForms): string {
  if (forms.size === 0) return message;
  // Longest first: at one position, a quoted form wins over the bare secret inside it.
  const alternatives = [...forms]
    .sort(([a], [b]) => b.length - a.length)
    .map(([form, replacement]) =>
      replacement === QUOTED ? escapeRegExp(form) : `(?<!\\w|\\d\\.)${escapeRegExp(form)}(?!\\w|\\.\\d)`,
    );
  return message.replace(new RegExp(alternatives.join('|'), 'g'), (found) => forms.get(found) ?? BARE);
}
