// The header table (lib/headers.ts; spec "Request headers", "Response headers") agrees with what
// clients are told: each operation's documented header parameters are the table's for it; the
// documents name no response header outside the table, and every header the table describes is in
// one of them; and what CORS leaves out a browser could not use anyway.
import t from 'tap'
import { headerTable } from '../lib/headers.js'
import type { HeaderName, Taker } from '../lib/headers.js'
import { buildApp } from './helpers/app.js'
import { testAuth } from './helpers/auth.js'
import { inlined } from './helpers/openapi.js'

type Json = Record<string, any>

/** Two option sets between them give every header the table describes a place in a document. */
const variants = {
  'auth, draft-11 rate limit fields, If-Match required, CORS': { auth: testAuth(), rateLimit: { max: 1000, timeWindow: 60_000 }, requireIfMatch: true, cors: { origins: ['https://app.example.com'] }, handlerTimeout: 5000 },
  'legacy rate limit fields, no Idempotency-Key': { rateLimit: { max: 1000, timeWindow: 60_000, fields: 'legacy', retryAfter: 'seconds' }, idempotency: false }
} as const

const documents: Record<string, Json> = {}
for (const [name, options] of Object.entries(variants)) {
  const app = await buildApp(t, options)
  documents[name] = inlined((await app.inject({ url: '/v1/openapi.json' })).json())
}

/** What takes an operation's headers in the table, by its method and path. */
function takerOf (method: string, path: string): Taker {
  if (path.endsWith('/batch')) return 'batch'
  const item = path.endsWith('}')
  const byMethod: Record<string, Taker> = { get: item ? 'retrieve' : 'list', head: item ? 'retrieve' : 'list', post: 'create', put: 'replace', patch: 'modify', delete: 'delete', options: 'capabilities' }
  return byMethod[method]
}

const entries = Object.entries(headerTable) as Array<[HeaderName, (typeof headerTable)[HeaderName]]>

t.test('each operation documents the request headers the table gives it', async t => {
  for (const [variant, document] of Object.entries(documents)) {
    const idempotency = !variant.includes('no Idempotency-Key')
    for (const [path, item] of Object.entries(document.paths as Json)) {
      for (const [method, operation] of Object.entries(item as Json)) {
        if ((operation.tags as string[]).includes('documentation')) continue
        const taker = takerOf(method, path)
        const documented = (operation.parameters as Json[]).filter(parameter => parameter.in === 'header').map(parameter => parameter.name as string)
        const expected = entries.filter(([, entry]) => entry.sent === 'request' && 'schema' in entry && (entry.on === 'every' || (entry.on as readonly string[]).includes(taker)) &&
          !('only' in entry && entry.only === 'idempotency' && !idempotency)).map(([name]) => name)
        t.same([...documented].sort(), [...expected].sort(), `${variant}: ${method.toUpperCase()} ${path}`)
        const required = (operation.parameters as Json[]).filter(parameter => parameter.in === 'header' && parameter.required === true).map(parameter => parameter.name as string)
        t.same(required, variant.includes('If-Match required') && ['replace', 'modify', 'delete'].includes(taker) ? ['If-Match'] : [], `${variant}: ${method.toUpperCase()} ${path} requires`)
      }
    }
  }
})

t.test('the documents\' response headers are the table\'s, and each it describes is in one of them', async t => {
  const seen = new Set<string>()
  for (const document of Object.values(documents)) {
    for (const item of Object.values(document.paths as Json)) {
      for (const operation of Object.values(item as Json)) {
        for (const response of Object.values(operation.responses as Json)) for (const name of Object.keys((response as Json).headers ?? {})) seen.add(name)
      }
    }
  }
  const described = entries.filter(([, entry]) => entry.sent === 'response' && 'schema' in entry).map(([name]) => name)
  t.same([...seen].filter(name => !described.includes(name as HeaderName)), [], 'no response header outside the table')
  t.same(described.filter(name => !seen.has(name)), [], 'no described header left out of every document')
})

t.test('what CORS leaves out, a browser could not use', async t => {
  // Fetch §2.2.2: headers a script may not set; Fetch §2.2.5 CORS-safelisted response headers, which a script reads without their being exposed.
  const forbidden = new Set(['accept-charset', 'accept-encoding', 'access-control-request-headers', 'access-control-request-method', 'connection', 'content-length', 'cookie', 'date', 'expect', 'host', 'keep-alive', 'origin', 'referer', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'via'])
  const safelisted = new Set(['cache-control', 'content-language', 'content-length', 'content-type', 'expires', 'last-modified', 'pragma'])
  for (const [name, entry] of entries) {
    const lower = name.toLowerCase()
    if (entry.sent === 'request') t.equal(entry.cors === false, forbidden.has(lower), `${name}: ${entry.cors === false ? 'not allowed, and a script may not set it' : 'allowed in a preflight'}`)
    // A preflight's own answer is read by the browser, never by the script.
    else t.equal(entry.exposed, !safelisted.has(lower) && !lower.startsWith('access-control-'), `${name}: ${entry.exposed ? 'exposed' : 'readable without exposing'}`)
  }
})
