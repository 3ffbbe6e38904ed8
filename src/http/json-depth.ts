/**
 * Deepest nesting of arrays and objects a request body may have. JSON.parse copes with any depth,
 * but JSON.stringify, graphql-js and our own walks recurse, and a body nested ~10 000 deep
 * overflows the stack (a 500) — so such bodies are refused when parsed, as a 400.
 */
export const MAX_JSON_DEPTH = 1000;

/** Whether `value` nests arrays/objects more than `max` levels deep. Iterative: any depth is safe. */
export function exceedsJsonDepth(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  const stack: Array<{ v: object; depth: number }> = [];
  if (typeof value === 'object' && value !== null) stack.push({ v: value, depth: 1 });
  while (stack.length > 0) {
    const { v, depth } = stack.pop()!;
    if (depth > max) return true;
    for (const child of Array.isArray(v) ? (v as unknown[]) : (Object.values(v) as unknown[]))
      if (typeof child === 'object' && child !== null) stack.push({ v: child, depth: depth + 1 });
  }
  return false;
}

export const tooDeepDetail = `The request body nests arrays or objects more than ${MAX_JSON_DEPTH} levels deep.`;
