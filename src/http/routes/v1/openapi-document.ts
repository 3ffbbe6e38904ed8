/**
 * GET /v1/openapi.json: the document the v1 routes generate, with the create bodies also published
 * under the names upstream's document gives them (`components.schemas.PodCreateInput`, …) and the
 * data centers a create accepts as the enum of `dataCenterIds` — SkyPilot reads that enum to drop
 * zones the REST create would refuse before it sends one.
 */

interface OpenApiDocument {
  paths?: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: unknown }> } }>>;
  components?: Record<string, unknown> & { schemas?: Record<string, unknown> };
}

/** Upstream's schema names for the bodies of the v1 create routes. */
const NAMED_BODIES: ReadonlyArray<[path: string, method: string, name: string]> = [
  ['/pods', 'post', 'PodCreateInput'],
  ['/endpoints', 'post', 'EndpointCreateInput'],
  ['/templates', 'post', 'TemplateCreateInput'],
  ['/networkvolumes', 'post', 'NetworkVolumeCreateInput'],
  ['/containerregistryauth', 'post', 'ContainerRegistryAuthCreateInput'],
];

/** A copy of `doc` with the named bodies under `components.schemas` and the data center enum set. */
export function publishedV1Document(doc: unknown, dataCenterIds: readonly string[]): unknown {
  const copy = structuredClone(doc) as OpenApiDocument;
  const schemas: Record<string, unknown> = { ...(copy.components?.schemas ?? {}) };
  for (const [path, method, name] of NAMED_BODIES) {
    const body = copy.paths?.[path]?.[method]?.requestBody?.content?.['application/json']?.schema;
    if (!body || typeof body !== 'object') continue;
    const schema = structuredClone(body) as { properties?: Record<string, { items?: Record<string, unknown> }> };
    const dataCenters = schema.properties?.dataCenterIds;
    if (dataCenters?.items) dataCenters.items = { ...dataCenters.items, enum: [...dataCenterIds] };
    schemas[name] = schema;
  }
  copy.components = { ...(copy.components ?? {}), schemas };
  return copy;
}
