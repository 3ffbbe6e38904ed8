// A comparable summary of an OpenAPI document: per operation, its parameters, its JSON request
// body's fields and required list, and its JSON responses' fields, with $ref, allOf, oneOf and
// anyOf resolved. Gantry's documents and the platform's public ones are summarized alike, so the
// conformance test compares like with like (test/openapi-conformance.test.ts).

type Json = Record<string, unknown>;

interface ShapeSummary {
  /** 'object', 'array' (then the fields are the items'), or another JSON type */
  type: string;
  properties: string[];
  required: string[];
}

interface OperationSummary {
  /** query parameters by name, with whether each is required */
  query: Record<string, boolean>;
  /** path parameters in order (their names differ between documents; their count does not) */
  pathParams: number;
  body: ShapeSummary | null;
  /** JSON responses by status code */
  responses: Record<string, ShapeSummary>;
}

/** `GET /v2/pods/{}` → summary; path parameters are written `{}` so names may differ. */
export type OpenApiSummary = Record<string, OperationSummary>;

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function deref(doc: Json, node: unknown, seen = new Set<string>()): Json {
  if (!isObj(node)) return {};
  const ref = node.$ref;
  if (typeof ref !== 'string') return node;
  if (seen.has(ref)) return {};
  seen.add(ref);
  let at: unknown = doc;
  for (const part of ref.replace(/^#\//, '').split('/')) at = isObj(at) ? at[part.replace(/~1/g, '/')] : undefined;
  return deref(doc, at, seen);
}

/** Every variant an object schema may take, flattened: allOf merges, oneOf/anyOf unite. */
function flatten(doc: Json, schema: unknown, depth = 0): { type: string; props: Set<string>; required: Set<string> } {
  const s = deref(doc, schema);
  const out = { type: typeof s.type === 'string' ? s.type : '', props: new Set<string>(), required: new Set<string>() };
  if (depth > 8) return out;
  if (isObj(s.properties)) for (const k of Object.keys(s.properties)) out.props.add(k);
  if (Array.isArray(s.required)) for (const k of s.required) if (typeof k === 'string') out.required.add(k);
  if (Array.isArray(s.allOf))
    for (const part of s.allOf) {
      const f = flatten(doc, part, depth + 1);
      out.type ||= f.type;
      f.props.forEach((p) => out.props.add(p));
      f.required.forEach((r) => out.required.add(r));
    }
  for (const key of ['oneOf', 'anyOf'] as const) {
    const variants = s[key];
    if (!Array.isArray(variants)) continue;
    const flat = variants.map((v) => flatten(doc, v, depth + 1)).filter((f) => f.type !== 'null');
    for (const f of flat) {
      out.type ||= f.type;
      f.props.forEach((p) => out.props.add(p));
    }
    // a field is required of a union only when every variant requires it
    const [first, ...rest] = flat;
    if (first) for (const r of first.required) if (rest.every((f) => f.required.has(r))) out.required.add(r);
  }
  if (Array.isArray(s.type)) out.type = s.type.find((t) => t !== 'null') ?? '';
  if (!out.type && out.props.size > 0) out.type = 'object';
  return out;
}

function shape(doc: Json, schema: unknown): ShapeSummary {
  const s = deref(doc, schema);
  const f = flatten(doc, s);
  if (f.type === 'array') {
    const items = flatten(doc, s.items);
    return { type: 'array', properties: [...items.props].sort(), required: [...items.required].sort() };
  }
  return { type: f.type || 'any', properties: [...f.props].sort(), required: [...f.required].sort() };
}

const jsonSchemaOf = (doc: Json, node: unknown): unknown => {
  const content = deref(doc, node).content;
  if (!isObj(content)) return undefined;
  const media = Object.entries(content).find(([type]) => /json/.test(type))?.[1];
  return isObj(media) ? media.schema : undefined;
};

/** Summarizes `doc`; `prefix` is prepended to its paths (a server URL's path, like `/v1`). */
export function summarizeOpenApi(doc: Json, prefix = ''): OpenApiSummary {
  const out: OpenApiSummary = {};
  const paths = isObj(doc.paths) ? doc.paths : {};
  for (const [path, item] of Object.entries(paths)) {
    if (!isObj(item)) continue;
    for (const method of METHODS) {
      const op = item[method];
      if (!isObj(op)) continue;
      const params = [
        ...(Array.isArray(item.parameters) ? item.parameters : []),
        ...(Array.isArray(op.parameters) ? op.parameters : []),
      ].map((p) => deref(doc, p));
      const query: Record<string, boolean> = {};
      for (const p of params) if (p.in === 'query' && typeof p.name === 'string') query[p.name] = p.required === true;
      const bodySchema = op.requestBody ? jsonSchemaOf(doc, op.requestBody) : undefined;
      const responses: Record<string, ShapeSummary> = {};
      if (isObj(op.responses))
        for (const [status, res] of Object.entries(op.responses)) {
          const schema = jsonSchemaOf(doc, res);
          if (schema !== undefined && /^2/.test(status)) responses[status] = shape(doc, schema);
        }
      const key = `${method.toUpperCase()} ${prefix}${path.replace(/\{[^}]+\}|:[A-Za-z_]\w*/g, '{}')}`;
      out[key] = {
        query,
        pathParams: (path.match(/\{[^}]+\}|:[A-Za-z_]\w*/g) ?? []).length,
        body: bodySchema === undefined ? null : shape(doc, bodySchema),
        responses,
      };
    }
  }
  return out;
}

const missingFrom = (want: string[], have: string[]): string[] => want.filter((x) => !have.includes(x));

/**
 * How `ours` differs from `theirs`, per operation of `theirs` (and `extra operation` for one
 * only `ours` has, when `keyFilter` keeps it): each difference one short line, so a list of
 * known ones reads like a to-do list.
 */
export function compareSummaries(
  theirs: OpenApiSummary,
  ours: OpenApiSummary,
  keyFilter: (key: string) => boolean = () => true,
): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [key, want] of Object.entries(theirs)) {
    const have = ours[key];
    if (!have) {
      out[key] = ['missing operation'];
      continue;
    }
    const d: string[] = [];
    const queryMissing = missingFrom(Object.keys(want.query), Object.keys(have.query));
    if (queryMissing.length) d.push(`query parameters missing: ${queryMissing.join(', ')}`);
    const queryExtra = missingFrom(Object.keys(have.query), Object.keys(want.query));
    if (queryExtra.length) d.push(`query parameters extra: ${queryExtra.join(', ')}`);
    if (want.body) {
      if (!have.body) d.push('request body missing');
      else {
        const missing = missingFrom(want.body.properties, have.body.properties);
        const extra = missingFrom(have.body.properties, want.body.properties);
        if (missing.length) d.push(`request fields missing: ${missing.join(', ')}`);
        if (extra.length) d.push(`request fields extra: ${extra.join(', ')}`);
        if (want.body.type !== have.body.type) d.push(`request body is ${have.body.type}, not ${want.body.type}`);
        if (want.body.required.join() !== have.body.required.join())
          d.push(`request requires [${have.body.required.join(', ')}], not [${want.body.required.join(', ')}]`);
      }
    }
    for (const [status, shape] of Object.entries(want.responses)) {
      const got = have.responses[status];
      if (!got) {
        d.push(`no ${status} response (answers ${Object.keys(have.responses).join(', ') || 'none'})`);
        continue;
      }
      if (shape.type !== got.type) d.push(`${status} answers ${got.type}, not ${shape.type}`);
      const missing = missingFrom(shape.properties, got.properties);
      if (missing.length) d.push(`${status} fields missing: ${missing.join(', ')}`);
    }
    if (d.length) out[key] = d;
  }
  for (const key of Object.keys(ours)) if (!theirs[key] && keyFilter(key)) out[key] = ['extra operation'];
  return out;
}
