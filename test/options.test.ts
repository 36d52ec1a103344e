// Plugin options: every bad option stops registration with API_ERR_OPTIONS_INVALID naming the
// option and the value received; good options resolve to frozen defaults.
import t from 'tap'
import { Writable } from 'node:stream'
import { memoryStore } from '../lib/index.js'
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
  ['requireIfMatch', { requireIfMatch: 1 }, /requireIfMatch must be a boolean, received 1/],
  ['cursorSecret (too short)', { cursorSecret: 'short' }, /cursorSecret must be a string of at least 16 characters/],
  ['cursorSecret (not a string)', { cursorSecret: 42 }, /cursorSecret must be a string of at least 16 characters/],
  ['cursorSecret (an array with a short one)', { cursorSecret: ['a-long-enough-secret-1', 'tiny'] }, /cursorSecret/],
  ['cursorTtlSeconds (zero)', { cursorTtlSeconds: 0 }, /cursorTtlSeconds must be a positive number, received 0/],
  ['cursorTtlSeconds (a string)', { cursorTtlSeconds: '60' }, /cursorTtlSeconds must be a positive number, received "60"/],
  ['cursorTtlSeconds (infinite)', { cursorTtlSeconds: Infinity }, /cursorTtlSeconds must be a positive number, received null/],
  ['problemTypeBase', { problemTypeBase: 7 }, /problemTypeBase must be a string, received 7/]
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

for (const [name, resources] of [['missing', undefined], ['not an array', 'books'], ['empty', []]] as const) {
  t.test(`resources ${name} rejects registration naming resources`, async t => {
    t.throws(() => resolveOptions({ resources } as unknown as ApiConventionsOptions), { code: 'API_ERR_OPTIONS_INVALID', message: /resources must be a non-empty array/ })
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
    paging: 'token',
    cursorSecretGenerated: true,
    cursorTtlSeconds: 86400,
    problemTypeBase: undefined,
    requireIfMatch: false
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
