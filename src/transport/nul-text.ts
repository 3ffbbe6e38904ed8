/**
 * NUL characters in request text. PostgreSQL's text type cannot hold U+0000 (the insert fails, and
 * the request answered 500), and no field of the API means anything with one, so a NUL is refused
 * where the text enters: in the URL (`%00`), in a REST body, in a GraphQL argument or variable.
 * Job inputs and worker outputs are free JSON the store keeps as JSON text, where a NUL stays the
 * escape `\u0000`: those are left alone.
 */

/** A URL holding `%00` (an id or parameter with a NUL once decoded); one scan of the raw URL, no decoding. */
export const urlHasNul = (url: string): boolean => url.includes('%00') || url.includes('\u0000');

/**
 * Whether JSON text may decode to a string with a NUL: only the escape `\u0000` can produce one (a
 * raw NUL is not valid JSON). A false positive (an escaped backslash before `u0000`) only costs the
 * walk of `findNul`.
 */
export const jsonMayHoldNul = (text: string): boolean => text.includes('\\u0000');

/**
 * The path (`env.KEY`, `ports.2`) of the first string or key holding a NUL in a parsed JSON value,
 * or null. Iterative: a deep body cannot overflow the stack.
 */
export function findNul(value: unknown, root = ''): string | null {
  const stack: Array<{ v: unknown; path: string }> = [{ v: value, path: root }];
  const join = (path: string, key: string | number): string => (path ? `${path}.${key}` : String(key));
  while (stack.length > 0) {
    const { v, path } = stack.pop()!;
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return path || 'body';
    } else if (Array.isArray(v)) {
      v.forEach((x, i) => stack.push({ v: x, path: join(path, i) }));
    } else if (typeof v === 'object' && v !== null) {
      for (const [k, x] of Object.entries(v)) {
        if (k.includes('\u0000')) return join(path, k.replaceAll('\u0000', '\\u0000'));
        stack.push({ v: x, path: join(path, k) });
      }
    }
  }
  return null;
}

export const nulViolation = (path: string): string => `${path}: must not contain a NUL character (\\u0000)`;
