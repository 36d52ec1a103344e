// Plugin entry: resolves options, builds the registry, installs the error path and the request
// pipeline, registers every route of the route table, and holds the public exports.
import fp from 'fastify-plugin'
import type { FastifyInstance, RouteOptions } from 'fastify'
import { resolveOptions, routePrefix } from './options.js'
import type { ApiConventionsOptions } from './options.js'
import { buildRegistry } from './registry/index.js'
import { listEnvelopeSchema, pageMetaSchema, responseSchema, schemaNames, singleEnvelopeSchema } from './registry/derive.js'
import type { ResourceModel } from './registry/model.js'
import { installProblemHandlers, problemSchema } from './problem.js'
import { warnOfRandomSecret } from './paging/cursor.js'
import { buildRouteTable, createRouteIndex, registerRoute } from './routes/table.js'
import { createOperationContext } from './operations/context.js'
import { createOperations } from './operations/index.js'
import { assignStores } from './operations/stores.js'
import { buildPipeline, installPipeline } from './pipeline.js'
import { createStoreTiming } from './store-timing.js'
import { createRequestTracing } from './tracing.js'
import { registerProblemPages } from './problem-pages.js'
import { registerPreflightRoute } from './security/cors.js'
import { routeUnmetExpectations } from './security/limits.js'
import { registerOpenApi } from './openapi/index.js'
import { registerCompression } from './http/compression.js'
import { schemaOptionsFor } from './routes/route-schema.js'
import { createAsyncWrites, operationStatusSchema } from './work/async-writes.js'
import { setUpChanges } from './changes/index.js'
import { mcpRouteSpec } from './mcp/index.js'

async function apiConventionsPlugin (app: FastifyInstance, given: ApiConventionsOptions) {
  const options = resolveOptions(given)
  const models = buildRegistry(options.resources)
  const storeTiming = options.serverTiming ? createStoreTiming() : null
  const assigned = assignStores(options.resources, models)
  // Changes keep the record before a write where a row rule may make it visible or not (changes/present.ts).
  const changes = options.changes === null ? null : setUpChanges(options.changes, models, assigned, model => context.rulesOf(model)?.read != null, app.log)
  const recorded = changes?.storeOf ?? assigned
  const storeOf = storeTiming === null ? recorded : storeTiming.timedStores(recorded)
  const prefix = routePrefix(app)
  const context = createOperationContext(options, models, storeOf, prefix)
  const { rulesOf } = context
  // Stores that keep tables check or upgrade them now: a schema the database cannot serve stops start-up.
  const stores = new Set(models.map(assigned))
  // The feed's own models (webhook deliveries) are kept in the resources' one store.
  for (const store of stores) await store.prepare?.([...models.filter(model => assigned(model) === store), ...changes?.ownModels ?? []], { idempotencyKeys: options.idempotency !== null, jobs: options.async !== null, changes: changes !== null })
  if (options.metrics !== null) app.addHook('onClose', options.metrics.watch(stores))
  if (options.cursorSecretGenerated) warnOfRandomSecret(app.log)

  app.setValidatorCompiler(({ schema, httpPart }) => httpPart === 'body' ? context.ajv.compile(schema) : () => true)

  const routes = createRouteIndex(app)
  app.addHook('onRoute', function indexRoute (route: RouteOptions) {
    routes.add(route)
  })
  // Before any route: a route keeps the error handler set when it is added.
  const typeBase = options.problemTypeBase ?? `${prefix}/problems/`
  installProblemHandlers(app, {
    errorFormat: options.errorFormat,
    typeBase,
    allowedMethods: path => routes.allowedAt(path)
  })
  installPipeline(app, buildPipeline(app, options, models, context, storeTiming, await createRequestTracing(options.tracing)))
  // Before any route, so every route of the plugin (and none of the host's) is compressed.
  await registerCompression(app, options.compression)
  routeUnmetExpectations(app.server, prefix)
  registerPreflightRoute(app)
  // Before the resource routes, or they go undocumented.
  await registerOpenApi(app, options, models, schemaOptionsFor(context), rulesOf)

  app.addSchema({ $id: 'Problem', ...problemSchema })
  if (options.async !== null) app.addSchema(operationStatusSchema)
  app.addSchema(pageMetaSchema)
  const refOf = (model: ResourceModel) => `${schemaNames(model).resource}#`
  for (const model of models) {
    const names = schemaNames(model)
    app.addSchema({ $id: names.resource, ...responseSchema(model, refOf) })
    app.addSchema({ $id: names.single, ...singleEnvelopeSchema(model, refOf(model), options) })
    app.addSchema({ $id: names.list, ...listEnvelopeSchema(model, refOf(model), options) })
  }
  const core = createOperations(context, app.log, typeBase)
  // Asynchronous work: workers on every instance, claiming once the app is ready; on close they stop claiming and let the running jobs finish.
  const asyncWrites = options.async === null ? null : createAsyncWrites(context, core, options.async, app.log)
  if (asyncWrites !== null) {
    app.addHook('onReady', async function startWorkers () { asyncWrites.workers.start() })
    app.addHook('onClose', async function stopWorkers () { await asyncWrites.workers.stop(asyncWrites.stopMillis) })
  }
  for (const spec of buildRouteTable(models, context, core, asyncWrites)) registerRoute(app, spec)
  if (changes !== null) {
    registerRoute(app, changes.spec(context, schemaOptionsFor(context), app))
    await changes.publish(context, app)
    for (const spec of changes.webhooks(context, app)) registerRoute(app, spec)
  }
  if (options.mcp !== null) registerRoute(app, await mcpRouteSpec(options.mcp, context, core))
  if (options.problemTypeBase === undefined) registerProblemPages(app, schemaOptionsFor(context))
}

/**
 * Turns TypeBox resource schemas into an HTTP JSON API following the conventions.
 * @example
 * await app.register(apiConventions, { prefix: '/v1', resources: [books] })
 */
export const apiConventions = fp(apiConventionsPlugin, { fastify: '5.x', name: 'api-conventions', encapsulate: true })
export default apiConventions

export { defineResource } from './define.js'
export type { ResourceDefinition, RelationDefinition, RecordOf } from './define.js'
export type { ApiConventionsOptions, OpenApiDetail, OpenApiLicense } from './options.js'
export { memoryStore } from './stores/memory.js'
export type { MemoryStoreOptions } from './stores/memory.js'
export { postgresStore, pgliteStore } from './stores/sql/index.js'
export type { SqlStoreOptions, PostgresStoreOptions, PgliteStoreOptions, TableMapping, PostgresPool, PostgresClient, PgliteInstance, PgliteQueryable, PositionsRedis } from './stores/sql/index.js'
export { VERSION_MISMATCH } from './stores/store.js'
export type { Store, StoredRecord, ListQuery, Page, SortKey, PageWindow, ReadOptions, WriteOptions, Fields, KeptResponse, KeyClaim, PoolStats, ChangeRecord, NewChange, ChangeQuery, ChangeRead } from './stores/store.js'
export type { IdempotencyOptions } from './idempotency.js'
export type { AsyncOptions } from './work/async-writes.js'
export type { Job, JobState, NewJob, JobStore } from './stores/jobs.js'
export type { ChangesOptions, NatsChangesOptions } from './changes/options.js'
export type { ShownChange } from './changes/present.js'
export type { McpOptions } from './mcp/options.js'
export { createMetrics } from './metrics.js'
export type { Metrics, MetricsOptions, MetricsRegistry } from './metrics.js'
export type { TracingOptions, OpenTelemetryTracer } from './tracing.js'
export type {
  ApplicationRules, ResourceRules, RowRule, FieldRule, ServerValue, ServerValueContext, WriteHooks, WriteEvent, WriteOperation, Transaction
} from './rules/types.js'
export type { ResourceModel, View, ViewRelation, FieldModel, RelationModel, Operation, FieldType } from './registry/model.js'
export type { FilterNode, Operand, Literal, FieldRef } from './query/filter/ast.js'
export * as errors from './errors.js'
export { defineAuth, secretTable } from './security/auth.js'
export type { AuthOptions, AuthorizationCheck, AuthorizedOperation, Verified } from './security/auth.js'
export type { CorsOptions } from './security/cors.js'
export type { RateLimitOptions, RedisClient } from './security/rate-limit.js'
export type { DeprecationOptions } from './security/deprecation.js'
export type { ResourcePolicy } from './security/headers.js'
export type { CompressionOptions } from './http/compression.js'
export type { AuditValues } from './security/audit-headers.js'
export { genReqId } from './security/request-id.js'
export { createClientErrorHandler, createFrameworkErrorHandler } from './security/limits.js'
export { securityHeaders } from './security/headers.js'
export { guardHostRoutes } from './security/host-routes.js'
export type { HostRouteOptions } from './security/host-routes.js'
// Fastify's types as the plugin extends them (`request.principal`, `request.audit`, the route
// config it reads): a declaration file reaches an augmentation only through an import.
export type {} from './security/index.js'
