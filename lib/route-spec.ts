// The route spec (routes/table.ts makes one per route): what every part that needs to know a route
// reads from the route's config, never by matching URLs: Allow and 405, CORS preflights,
// authorization, resource policies, the audit log, the pipeline's route steps, the OpenAPI document.
// Types and two readers only, so that the request edge (security/) need not import the routes.
import type { FastifyContextConfig, FastifyRequest, FastifySchema, RouteHandlerMethod, RouteOptions } from 'fastify'
import type { ResourceModel } from './registry/model.js'
import type { AuthorizedOperation } from './security/auth.js'
import type { Store } from './stores/store.js'
import type { Views } from './rules/view.js'

/** What a route does: a resource operation, a batch of them, an asynchronous operation's status, the change feed, the MCP endpoint, or one of the plugin's own pages. */
export type RouteOperation = AuthorizedOperation | 'batch' | 'operation-status' | 'changes' | 'webhook-deliveries' | 'webhook-retry' | 'mcp' | 'document' | 'docs' | 'problem-types'

export interface RouteSpec {
  /** GET routes serve HEAD too (RETRIEVE HEADERS): Fastify derives the HEAD route, with this spec. */
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS'
  /** Relative to the plugin's prefix, in Fastify's syntax: `/books/:id`. */
  readonly path: string
  /** Every method served at `path`, as Allow lists them: 405 answers, QUERY CAPABILITIES, CORS preflights. */
  readonly allow: readonly string[]
  readonly operation: RouteOperation
  /** The resource whose records the route serves (a nested collection's: the children); null for the plugin's pages. */
  readonly resource: ResourceModel | null
  /** Where `resource`'s records are kept; null for the plugin's pages. */
  readonly store: Store | null
  /** The resources as a caller sees them (rules/view.ts); null for the plugin's pages. */
  readonly views: Views | null
  /** The route names one record, which authorization reads before deciding. */
  readonly item: boolean
  /** Media types the request body may have; empty when the operation reads none. */
  readonly bodyTypes: readonly string[]
  /** Media types of its successful responses. */
  readonly responseTypes: readonly string[]
  readonly schema: FastifySchema
  readonly handler: RouteHandlerMethod
  /** Route settings of the plugin's pages (`public`, `produces`, a page's CSP). */
  readonly config?: FastifyContextConfig
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's entry in the route table. */
    route?: RouteSpec
  }
}

/** The spec of the route a request matched; undefined on routes outside the table (the CORS catch-all). */
export const routeSpecOf = (request: FastifyRequest): RouteSpec | undefined => request.routeOptions.config.route

/** The spec a route carries, as an onRoute hook sees it. */
export const routeSpecIn = (route: RouteOptions): RouteSpec | undefined => route.config?.route

/**
 * The spec of a route of the API as a whole (batch, the operation monitor, the change feed, MCP,
 * webhook deliveries): it serves no one resource's records, so it has no resource, store or views,
 * and it answers only its own media types (the Accept check reads `produces`).
 */
export function apiRoute (route: Pick<RouteSpec, 'method' | 'path' | 'allow' | 'operation' | 'responseTypes' | 'schema' | 'handler'> & { readonly bodyTypes?: readonly string[] }): RouteSpec {
  return { resource: null, store: null, views: null, item: false, bodyTypes: [], ...route, config: { produces: route.responseTypes } }
}
