// Plugin options: every bad option stops registration with API_ERR_OPTIONS_INVALID naming the
// option and the value received; good options resolve to frozen defaults.
import t from 'tap'
import { Writable } from 'node:stream'
import type { TObject } from '@sinclair/typebox'
import { memoryStore } from '../lib/index.js'
import type { ResourceDefinition, Store } from '../lib/index.js'
import { resolveOptions } from '../lib/options.js'
import type { ApiConventionsOptions } from '../lib/options.js'
import { demoResources } from '../demo/schemas/index.js'
import { buildApp } from './helpers/app.js'

const bad: ReadonlyArray<readonly [string, Record<string, unknown>, RegExp]> = [
  ['errorFormat', { errorFormat: 'xml' }, /errorFormat must be one of 'flat', 'envelope', received "xml"/],
  ['singleResource', { singleResource: true }, /singleResource must be one of 'nested', 'flat', received true/],
  ['links', { links: 'map' }, /links must be one of 'array', 'object', received "map"/],
  ['paging', { paging: 'cursor' }, /paging must be one of 'token', 'offset', received "cursor"/],
  ['totalAtRoot', { totalAtRoot: 'yes' }, /totalAtRoot must be a boolean, received "yes"/],
  ['lastLink', { lastLink: 0 }, /lastLink must be a boolean, received 0/],
  ['requireIfMatch', { requireIfMatch: 1 }, /requireIfMatch must be a boolean, received 1/],
  ['serverTiming', { serverTiming: 'on' }, /serverTiming must be a boolean, received "on"/],
  ['cursorSecret (too short)', { cursorSecret: 'short' }, /cursorSecret must be a string of at least 16 characters/],
  ['cursorSecret (not a string)', { cursorSecret: 42 }, /cursorSecret must be a string of at least 16 characters/],
  ['cursorSecret (an array with a short one)', { cursorSecret: ['a-long-enough-secret-1', 'tiny'] }, /cursorSecret/],
  ['cursorTtlSeconds (zero)', { cursorTtlSeconds: 0 }, /cursorTtlSeconds must be a positive number, received 0/],
  ['cursorTtlSeconds (a string)', { cursorTtlSeconds: '60' }, /cursorTtlSeconds must be a positive number, received "60"/],
  ['cursorTtlSeconds (infinite)', { cursorTtlSeconds: Infinity }, /cursorTtlSeconds must be a positive number, received null/],
  ['problemTypeBase', { problemTypeBase: 7 }, /problemTypeBase must be a string, received 7/],
  ['compression (not an object)', { compression: true }, /compression must be false or an object \{ threshold\?, encodings\? \}, received true/],
  ['compression.threshold (zero)', { compression: { threshold: 0 } }, /compression.threshold must be a positive integer, received 0/],
  ['compression.threshold (a string)', { compression: { threshold: '1kb' } }, /compression.threshold must be a positive integer, received "1kb"/],
  ['compression.encodings (empty)', { compression: { encodings: [] } }, /compression.encodings must be a non-empty array of distinct codings among 'br', 'gzip', received \[\]/],
  ['compression.encodings (deflate)', { compression: { encodings: ['gzip', 'deflate'] } }, /compression.encodings must be .*, received \["gzip","deflate"\]/],
  ['compression.encodings (twice)', { compression: { encodings: ['br', 'br'] } }, /compression.encodings must be .*distinct.*, received \["br","br"\]/],
  ['compression.encodings (a string)', { compression: { encodings: 'br' } }, /compression.encodings must be .*, received "br"/]
]

for (const [name, options, message] of bad) {
  t.test(`a bad ${name} rejects registration with API_ERR_OPTIONS_INVALID naming it`, async t => {
    await t.rejects(buildApp(t, options), { code: 'API_ERR_OPTIONS_INVALID', message })
  })
}

t.test('an options error is a TypeError with status 500, as Fastify\'s own boot errors are', async t => {
  const error = await buildApp(t, { links: 'map' } as never).catch((e: unknown) => e)
  t.type(error, TypeError)
  t.match(error, { statusCode: 500, message: /^Invalid api-conventions options: links/ })
})

for (const [name, resources] of [['missing', undefined], ['not an array', 'books']] as const) {
  t.test(`resources ${name} rejects registration naming resources`, async t => {
    t.throws(() => resolveOptions({ resources } as unknown as ApiConventionsOptions), { code: 'API_ERR_OPTIONS_INVALID', message: /resources must be a non-empty array/ })
  })
}

t.test('an empty resources list rejects registration saying the list is empty', async t => {
  await t.rejects(buildApp(t, { resources: () => [] }), {
    code: 'API_ERR_OPTIONS_INVALID',
    message: 'Invalid api-conventions options: resources must list at least one resource, received an empty array'
  })
})

// A misspelt key would otherwise be ignored and its default used: `cors: { orgins }` allows no origin.
const unknownKeys: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
  [{ errorformat: 'flat' }, 'errorformat is not a known key; did you mean "errorFormat"?'],
  [{ cursorSecrets: ['a-long-enough-secret-1'] }, 'cursorSecrets is not a known key; did you mean "cursorSecret"?'],
  [{ colour: 'blue' }, 'colour is not a known key; known: resources, errorFormat, singleResource, links, totalAtRoot, lastLink, paging, cursorSecret, cursorTtlSeconds, problemTypeBase, requireIfMatch, auth, cors, rateLimit, cacheControl, headerProfile, featurePolicyHeader, deprecation, resourcePolicies, maxQueryLength, bodyLimit, handlerTimeout, idempotency, batch, async, changes, mcp, openapi, docsPage, metrics, serverTiming, compression, tracing, prefix, logLevel, logSerializers'],
  [{ cors: { orgins: ['https://app.example.com'] } }, 'cors.orgins is not a known key; did you mean "origins"?'],
  [{ cors: { origins: [], maxage: 60 } }, 'cors.maxage is not a known key; did you mean "maxAge"?'],
  [{ auth: { bearer: () => null, relm: 'api' } }, 'auth.relm is not a known key; did you mean "realm"?'],
  [{ auth: { bearer: () => null, scopes: [] } }, 'auth.scopes is not a known key; known: realm, authorizationUri, bearer, basic, apiKeys, authorize, principalKey, principalOf'],
  [{ rateLimit: { max: 10, timeWindow: 1000, window: 5 } }, 'rateLimit.window is not a known key; known: max, timeWindow, redis, nameSpace, retryAfter, fields'],
  [{ rateLimit: { max: 10, timeWindow: 1000, namespace: 'x' } }, 'rateLimit.namespace is not a known key; did you mean "nameSpace"?'],
  [{ openapi: { titel: 'Books' } }, 'openapi.titel is not a known key; did you mean "title"?'],
  [{ compression: { treshold: 2048 } }, 'compression.treshold is not a known key; did you mean "threshold"?'],
  [{ compression: { level: 4 } }, 'compression.level is not a known key; known: threshold, encodings'],
  [{ mcp: { instruction: 'Books.' } }, 'mcp.instruction is not a known key; did you mean "instructions"?'],
  [{ deprecation: { date: '2030-01-01', sunet: '2031-01-01' } }, 'deprecation.sunet is not a known key; did you mean "sunset"?'],
  [{ resourcePolicies: { books: { cachecontrol: 'private' } } }, 'resourcePolicies.books.cachecontrol is not a known key; did you mean "cacheControl"?'],
  [{ resourcePolicies: { books: { deprecation: { date: '2030-01-01', links: 'https://example.com' } } } }, 'resourcePolicies.books.deprecation.links is not a known key; did you mean "link"?']
]
for (const [options, detail] of unknownKeys) {
  t.test(`an unknown key is refused at registration: ${detail.split(' ', 1)[0]}`, async t => {
    await t.rejects(buildApp(t, options), { code: 'API_ERR_OPTIONS_INVALID', message: `Invalid api-conventions options: ${detail}` })
  })
}

t.test('Fastify\'s own register options are not unknown keys', async t => {
  const app = await buildApp(t, { logLevel: 'error', logSerializers: {} } as never)
  t.equal((await app.inject({ url: '/v1/books' })).statusCode, 200)
})

const definitionKeys: ReadonlyArray<readonly [(store: Store) => ReadonlyArray<ResourceDefinition<TObject>>, string]> = [
  [store => [{ ...demoResources(store)[0], singluar: 'author' } as never], 'authors: authors.singluar is not a known key; did you mean "singular"?'],
  [store => [{ ...demoResources(store)[0], pageSize: 5 } as never], 'authors: authors.pageSize is not a known key; known: name, singular, schema, idField, defaultPageSize, maxPageSize, operations, relations, generateId, requireIfMatch, searchable, store, rules, serverValues, hooks'],
  [store => demoResources(store).map(r => r.name === 'books' ? { ...r, relations: { ...r.relations, author: { ...r.relations?.author, resouce: 'authors' } } } as never : r),
    'books.relations.author: books.relations.author.resouce is not a known key; did you mean "resource"?']
]
for (const [resources, detail] of definitionKeys) {
  t.test(`an unknown key of a resource definition is refused at registration: ${detail.split(':', 1)[0]}`, async t => {
    await t.rejects(buildApp(t, { resources }), { code: 'API_ERR_RESOURCE_INVALID', message: `Invalid resource ${detail}` })
  })
}

t.test('resolved options carry the defaults and are frozen', async t => {
  const resources = demoResources(memoryStore())
  const options = resolveOptions({ resources })
  t.match(options, {
    resources,
    errorFormat: 'flat',
    singleResource: 'nested',
    links: 'array',
    totalAtRoot: false,
    lastLink: true,
    paging: 'token',
    cursorSecretGenerated: true,
    cursorTtlSeconds: 86400,
    problemTypeBase: undefined,
    requireIfMatch: false,
    compression: { threshold: 1024, encodings: ['br', 'gzip'] }
  })
  t.equal(options.cursorSecrets.length, 1)
  t.ok(Object.isFrozen(options))
  t.ok(Object.isFrozen(options.cursorSecrets))
})

t.test('given options are kept as given', async t => {
  const options = resolveOptions({
    resources: demoResources(memoryStore()),
    errorFormat: 'envelope',
    singleResource: 'flat',
    links: 'object',
    totalAtRoot: true,
    lastLink: false,
    paging: 'offset',
    cursorSecret: ['the-newest-secret-000', 'the-older-secret-0000'],
    cursorTtlSeconds: 60,
    problemTypeBase: 'https://example.com/problems/',
    requireIfMatch: true
  })
  t.match(options, {
    errorFormat: 'envelope',
    singleResource: 'flat',
    links: 'object',
    totalAtRoot: true,
    lastLink: false,
    paging: 'offset',
    cursorSecrets: ['the-newest-secret-000', 'the-older-secret-0000'],
    cursorSecretGenerated: false,
    cursorTtlSeconds: 60,
    problemTypeBase: 'https://example.com/problems/',
    requireIfMatch: true
  })
})

t.test('without cursorSecret the plugin warns that paging tokens will not survive a restart', async t => {
  const lines: Array<{ level: number, msg: string }> = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(JSON.parse(String(chunk))); done() } })
  await buildApp(t, { cursorSecret: undefined, server: { logger: { level: 'warn', stream } } })
  t.match(lines, [{ level: 40, msg: /no cursorSecret configured/ }])
})

t.test('with a cursorSecret the plugin logs no warning', async t => {
  const lines: unknown[] = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(String(chunk)); done() } })
  await buildApp(t, { server: { logger: { level: 'warn', stream } } })
  t.same(lines, [])
})
