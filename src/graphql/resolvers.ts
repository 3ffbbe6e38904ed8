import { accountResolvers } from './account-resolvers.js';
import { catalogOfferResolvers } from './catalog-offer-resolvers.js';
import { catalogResolvers } from './catalog-resolvers.js';
import { clusterResolvers } from './cluster-resolvers.js';
import type { GraphqlContext } from './context.js';
import { endpointResolvers } from './endpoint-resolvers.js';
import { podEditResolvers } from './pod-edit-resolvers.js';
import { interruptibleResolvers } from './interruptible-resolvers.js';
import { podResolvers } from './pod-resolvers.js';
import type { ResolverMap } from './schema.js';
import { templateResolvers } from './template-resolvers.js';
import { volumeResolvers } from './volume-resolvers.js';

/** Every area's resolvers, merged per type; two areas defining one field is a programming error. */
export function allResolvers(): ResolverMap<GraphqlContext> {
  const merged: ResolverMap<GraphqlContext> = {};
  const areas = [
    accountResolvers,
    catalogResolvers,
    clusterResolvers,
    catalogOfferResolvers,
    endpointResolvers,
    podResolvers,
    podEditResolvers,
    templateResolvers,
    volumeResolvers,
    interruptibleResolvers,
  ];
  for (const area of areas) {
    for (const [type, fields] of Object.entries(area)) {
      const target = (merged[type] ??= {});
      for (const [field, resolve] of Object.entries(fields)) {
        if (target[field]) throw new Error(`GraphQL resolver ${type}.${field} is defined twice`);
        target[field] = resolve;
      }
    }
  }
  return merged;
}
