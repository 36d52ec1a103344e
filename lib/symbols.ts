// Private symbols, in one place: the properties the plugin keeps on Fastify's and Node's objects.
//
// The framework and dependency internals the code relies on, beyond their documented API, each
// pinned by a test in test/internals.test.ts that fails when an upgrade changes it:
// - Fastify keeps a reply's headers in an own property whose symbol is described
//   'fastify.reply.headers' (security/headers.ts replyHeaders; it falls back to reply.headers()).
// - Fastify passes genReqId the IncomingMessage that becomes request.raw (security/request-id.ts, kOwnId).
// - Fastify's frameworkErrors sees a too-long path parameter as FST_ERR_MAX_PARAM_LENGTH (security/limits.ts).
// - Node's http server emits 'checkExpectation' for an Expect other than 100-continue and, with a
//   listener, leaves the answer to it; emitting 'request' hands the request to the app (security/limits.ts).
// - Node reports headers over maxHeaderSize to clientError as HPE_HEADER_OVERFLOW (security/limits.ts).
// - @fastify/rate-limit's store/LocalStore.js and store/RedisStore.js: constructors
//   (continueExceeding, exponentialBackoff, …) and incr(key, callback, timeWindow, max), the
//   LocalStore calling back before incr returns (security/rate-limit.ts).
// - helmet's middleware sets its headers with setHeader before calling next, synchronously (security/headers.ts).
// - Negotiator's mediaType(offers) returns the offer string as given, undefined when none is
//   acceptable, and the first offer at equal preference (http/negotiation.ts).
// - fast-json-stringify serializes `type: [T, 'null']` as anyOf [T, null] would (registry/derive.ts serializable).
// - Ajv reports a failed anyOf as one error per branch, schemaPath `…/anyOf/<n>/…`, then one with
//   keyword 'anyOf' (validation.ts failsOtherBranch).
// - @fastify/swagger calls `transform` with { schema, url, route, openapiObject } (openapi/index.ts documentRoute).
// - PGlite's text decoding drops a leading U+FEFF (stores/sql/pglite.ts dropsLeadingBom).
// - Fastify passes every onRoute hook the same route object, and the HEAD route it derives from a
//   GET carries the GET's config (routes/table.ts createRouteIndex, pipeline.ts route steps).
// - Fastify's initialConfig.routerOptions holds its router settings in find-my-way's terms
//   (routes/table.ts createRouteIndex).
// - Fastify's body parser calls back in the async context the request's hooks ran in, also for a
//   body that arrives later (store-timing.ts; pinned by test/server-timing.test.ts).
// - Fastify ends a derived HEAD route's onSend with a step named headRouteOnSendHandler, which
//   drops the body; @fastify/compress's onRoute hook adds its own step after it (http/compression.ts compressHead).
// - @fastify/compress leaves a body that already has a Content-Encoding alone, and adds
//   `accept-encoding` to a Vary that does not hold it in lower case (http/compression.ts).
// - Negotiator's encodings(available, { preferred }) breaks ties by `preferred` (http/compression.ts acceptedCodings).

/** The store read an item request shares between authorization and RETRIEVE (record-once.ts). */
export const kRecordRead = Symbol('api-conventions.recordRead')
/** A JSON body whose text can hold no unstorable value, so its parsed value is not walked (formats/json.ts). */
export const kPlainJson = Symbol('api-conventions.plainJson')
/** The response format negotiated for a request, for the ETag (http/negotiation.ts). */
export const kFormat = Symbol('api-conventions.format')
/** On a raw request whose Fastify id came from genReqId (security/request-id.ts). */
export const kOwnId = Symbol('api-conventions.ownRequestId')
/** On a raw request whose Expect the plugin answers with a 417 problem (security/limits.ts). */
export const kUnmetExpectation = Symbol('Expect other than 100-continue')
/** On a Node server: the prefixes of the plugin instances registered on it (security/limits.ts). */
export const kPluginPrefixes = Symbol('prefixes of the plugin instances on this server')
/** The caller's non-secret key (the principal key of auth), which Idempotency-Keys are scoped by (idempotency.ts). */
export const kCaller = Symbol('api-conventions.caller')
/** The store transaction a keyed write runs in (idempotency.ts); the write's own steps join it. */
export const kKeyedTransaction = Symbol('api-conventions.keyedTransaction')
/** The time a request has spent on its store so far, for Server-Timing (store-timing.ts). */
export const kStoreTime = Symbol('api-conventions.storeTime')
/** What the plugin reads of a createMetrics() result (metrics.ts): not part of its public shape. */
export const kMetricsCollector = Symbol('api-conventions.metricsCollector')
/** A request's server span, ended once it is answered (tracing.ts). */
export const kSpan = Symbol('api-conventions.span')
/**
 * An OpenTelemetry context key: the tracer the SQL stores start their statement spans with, set in
 * the context of each request the plugin traces (tracing.ts, stores/sql/tracing.ts).
 */
export const kStatementTracer = Symbol('api-conventions.statementTracer')
/** A webhooks option only tests give (changes/webhook-http.ts): how deliveries resolve host names, in place of dns.lookup. */
export const kResolveHost = Symbol('api-conventions.resolveHost')
