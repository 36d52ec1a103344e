// Plugin entry (STYLE §3): resolves options, builds the registry, wires the error path and the
// routes of every resource, and holds the public exports.
import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { addRouteHook, mayHaveBody } from './route-hooks.js'
import { resolveOptions } from './options.js'
import type { ApiConventionsOptions } from './options.js'
import { buildRegistry } from './registry/index.js'
import { listEnvelopeSchema, responseSchema, schemaNames, singleEnvelopeSchema } from './registry/derive.js'
import type { ResourceModel } from './registry/model.js'
import { installProblemHandlers, problemSchema } from './problem.js'
import { BodyInvalidError, withInvalidParams } from './errors.js'
import { createAjv, unstorableTextParam } from './validation.js'
import { createCursorCodec } from './query/cursor.js'
import { registerCollectionRoutes } from './routes/collection.js'
import { registerItemRoutes } from './routes/item.js'
import type { RouteContext } from './routes/context.js'
import { createAcceptCheck } from './http/negotiation.js'
import { decodeBody, installFormats } from './formats/index.js'
import { registerProblemPages } from './problem-pages.js'
import { registerSecurity } from './security/index.js'
import { registerOpenApi } from './openapi.js'
import { schemaOptionsFor } from './routes/route-schema.js'
import { kPlainJson, kRecordRead } from './symbols.js'

async function apiConventionsPlugin (app: FastifyInstance, given: ApiConventionsOptions) {
  const options = resolveOptions(given)
  const models = buildRegistry(options.resources)
  // Stores that keep tables check or upgrade them now: a schema the database cannot serve stops start-up (issue 6).
  for (const store of new Set(models.map(model => model.store))) await store.prepare?.(models.filter(model => model.store === store))
  const prefix = app.prefix
  if (options.cursorSecretGenerated) app.log.warn('api-conventions: no cursorSecret configured; paging tokens use a random key and will not survive a restart or work across instances')

  const allowed = new Map<RegExp, readonly string[]>()
  // The same methods by route URL (`/v1/books/:id`), for CORS preflights to the matched route.
  const methodsByRoute = new Map<string, readonly string[]>()
  const context: RouteContext = {
    options,
    envelope: {
      prefix,
      singleResource: options.singleResource,
      links: options.links,
      totalAtRoot: options.totalAtRoot,
      cursor: createCursorCodec({ secrets: options.cursorSecrets, ttlSeconds: options.cursorTtlSeconds })
    },
    query: { cursor: createCursorCodec({ secrets: options.cursorSecrets, ttlSeconds: options.cursorTtlSeconds }), defaultPaging: options.paging },
    ajv: createAjv(),
    allow (pattern, methods) {
      const source = (prefix + pattern).replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z]+/g, '[^/]+')
      // Exact: a trailing slash names no route, so it is a 404, not a 405 that allows the very method.
      allowed.set(new RegExp(`^${source}$`), methods)
      methodsByRoute.set(prefix + pattern, methods)
    }
  }

  // Bodies: JSON parsed safely (prototype poisoning is a 400, not a polluted object) from strict
  // UTF-8 (RFC 8259 §8.1): invalid bytes are a 400, never stored as U+FFFD.
  app.removeAllContentTypeParsers()
  const parseJson = app.getDefaultJsonParser('error', 'error')
  // JSON text can hold NUL or a lone surrogate only as an escape (raw control characters are not
  // JSON, and strict UTF-8 has no surrogates), and a number too large for a double only with an
  // exponent of three digits or with over 308 digits: bodies without one skip the walk below.
  const mayHoldUnstorable = /\\u(?:0000|[dD][89a-fA-F])|[eE]\+?\d{3}|\d{309}/
  // A request flag, not a WeakSet: see kRecordRead.
  app.decorateRequest(kPlainJson, false)
  app.decorateRequest(kRecordRead, null)
  app.addContentTypeParser(['application/json', 'application/merge-patch+json'], { parseAs: 'buffer' }, function parseJsonBody (request, body, done) {
    let text: string
    try {
      text = decodeBody(body as Buffer)
    } catch (error) {
      return done(error as Error, undefined)
    }
    if (!mayHoldUnstorable.test(text)) (request as unknown as Record<symbol, boolean>)[kPlainJson] = true
    parseJson(request, text, done)
  })
  // XML, form and multipart bodies, and XML responses when Accept asks for them (issue 8).
  const formats = installFormats(app, models)
  // Whatever the format: text no store keeps as sent is a 400 naming the field, before the schema.
  function checkStorableText (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) {
    const unstorable = request.body === undefined || request.body === null || (request as unknown as Record<symbol, boolean>)[kPlainJson] ? undefined : unstorableTextParam(request.body)
    done(unstorable === undefined ? undefined : withInvalidParams(new BodyInvalidError(), [unstorable]))
  }
  app.addHook('onRoute', function checkBodyText (route: RouteOptions) {
    if (mayHaveBody(route)) addRouteHook(route, 'preValidation', checkStorableText)
  })
  app.setValidatorCompiler(({ schema, httpPart }) => httpPart === 'body' ? context.ajv.compile(schema) : () => true)

  // Before registerSecurity: it adds the `OPTIONS *` route for preflights, and a route keeps the error handler set when it is added.
  installProblemHandlers(app, {
    errorFormat: options.errorFormat,
    typeBase: options.problemTypeBase ?? `${prefix}/problems/`,
    allowedMethods (path) {
      for (const [pattern, methods] of allowed) if (pattern.test(path)) return methods
      return undefined
    }
  })
  // Security hooks in STYLE §3's order, ahead of every route and of the hooks added below.
  registerSecurity(app, options, models, url => methodsByRoute.get(url), createAcceptCheck(formats))
  // Before the resource routes, or they go undocumented; after the error handler, which routes capture when added.
  await registerOpenApi(app, options, models, schemaOptionsFor(context), context.allow)

  app.addSchema({ $id: 'Problem', ...problemSchema })
  const refOf = (model: ResourceModel) => `${schemaNames(model).resource}#`
  for (const model of models) {
    const names = schemaNames(model)
    app.addSchema({ $id: names.resource, ...responseSchema(model, refOf) })
    app.addSchema({ $id: names.single, ...singleEnvelopeSchema(model, refOf(model), options) })
    app.addSchema({ $id: names.list, ...listEnvelopeSchema(model, refOf(model), options) })
  }
  for (const model of models) {
    registerCollectionRoutes(app, model, context)
    registerItemRoutes(app, model, context)
  }
  if (options.problemTypeBase === undefined) registerProblemPages(app, context.allow, schemaOptionsFor(context))
}

/**
 * Turns TypeBox resource schemas into an HTTP JSON API following the conventions.
 * @example
 * await app.register(apiConventions, { prefix: '/v1', resources: [books] })
 */
export const apiConventions = fp(apiConventionsPlugin, { fastify: '5.x', name: 'api-conventions', encapsulate: true })
export default apiConventions

export { defineResource } from './registry/define.js'
export type { ResourceDefinition, RelationDefinition, RecordOf } from './registry/define.js'
export type { ApiConventionsOptions } from './options.js'
export { memoryStore } from './stores/memory.js'
export type { MemoryStoreOptions } from './stores/memory.js'
export { postgresStore, pgliteStore } from './stores/sql/index.js'
export type { SqlStoreOptions, PostgresStoreOptions, PgliteStoreOptions, TableMapping } from './stores/sql/index.js'
export { VERSION_MISMATCH } from './stores/store.js'
export type { Store, StoredRecord, ListQuery, Page, SortKey, PageWindow, WriteOptions, Fields } from './stores/store.js'
export type { ResourceModel, FieldModel, RelationModel, Operation, FieldType } from './registry/model.js'
export type { FilterNode, Operand, Literal, FieldRef } from './query/filter/ast.js'
export * as errors from './errors.js'
export { defineAuth, secretTable } from './security/auth.js'
export type { AuthOptions, AuthorizationCheck, AuthorizedOperation, Verified } from './security/auth.js'
export type { CorsOptions } from './security/cors.js'
export type { RateLimitOptions } from './security/rate-limit.js'
export type { DeprecationOptions } from './security/deprecation.js'
export type { ResourcePolicy } from './security/headers.js'
export type { AuditValues } from './security/audit-headers.js'
export { genReqId } from './security/request-id.js'
export { createClientErrorHandler, createFrameworkErrorHandler } from './security/limits.js'
export { securityHeaders } from './security/headers.js'
export { guardHostRoutes } from './security/host-routes.js'
export type { HostRouteOptions } from './security/host-routes.js'
