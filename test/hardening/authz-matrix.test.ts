// Authorization matrix (spec "Authentication" 1–4, 6; docs/demo-contract.md
// API_TOKENS, API_KEYS, ALLOWED_ORIGINS): every route the demo registers, collected with an
// onRoute hook so a new route cannot escape, × every method it serves × eight credentials ×
// three origins. The expected status comes from the demo's configuration and the reviews' row
// rules, written out below from the contract; the test compares it with what a client gets, cell by cell.
import t from 'tap'
import Fastify from 'fastify'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse, RouteOptions } from 'fastify'
import apiConventions, { memoryStore } from '../../lib/index.js'
import { buildDemoApp, demoPluginOptions } from '../../demo/app.js'
import { loadConfig } from '../../demo/config.js'

// The demo's defaults: among the tokens dev-token:write:dev, read-token:read:reader and
// admin-token:admin:admin; dev-key:write (its user is the key itself); http://localhost:8080.
const config = loadConfig({ STORE: 'memory', RATE_LIMIT_MAX: '1000000000', CURSOR_SECRET: 'matrix-secret-0123456789' })

const credentials = {
  anonymous: {},
  malformed: { authorization: 'Bearer' },
  wrong: { authorization: 'Bearer not-a-known-token' },
  wrongKey: { 'x-api-key': 'not-a-known-key' },
  read: { authorization: 'Bearer read-token' },
  write: { authorization: 'Bearer dev-token' },
  writeKey: { 'x-api-key': 'dev-key' },
  admin: { authorization: 'Bearer admin-token' }
} as const satisfies Record<string, Record<string, string>>
type Credential = keyof typeof credentials

const origins = { allowed: 'http://localhost:8080', disallowed: 'https://evil.example', none: undefined } as const
type OriginKind = keyof typeof origins

interface CollectedRoute { readonly url: string, readonly method: string, readonly options: RouteOptions }

/**
 * The demo app (demo/app.ts) assembled from the same parts — the plugin with the demo's
 * resources and security options, and /health — with an onRoute hook in front. A test below
 * checks its route table equals buildDemoApp's, so the copy cannot drift from the real demo.
 */
async function buildObservedDemo (): Promise<{ app: FastifyInstance, routes: CollectedRoute[] }> {
  const app = Fastify()
  const routes: CollectedRoute[] = []
  app.addHook('onRoute', function collectRoute (route) {
    for (const method of [route.method].flat()) routes.push({ url: route.url, method, options: route })
  })
  app.get('/health', function health () { return { status: 'ok' } })
  await app.register(apiConventions, demoPluginOptions(config, memoryStore()))
  await app.ready()
  return { app, routes }
}

const { app, routes } = await buildObservedDemo()
t.teardown(() => app.close())

// ---- The expectation, from the configuration ----------------------------------------------

const readMethods = new Set(['GET', 'HEAD', 'OPTIONS'])
type Resources = 'authors' | 'books' | 'reviews' | 'webhooks'
/**
 * The demo's resource paths (docs/demo-contract.md "Addresses" and "Application rules"): the resource
 * written there (or, with `item`, the one whose `:id` is in the path: a nested collection's parent).
 */
const resourcePaths: Readonly<Record<string, { readonly resources: Resources, readonly item: boolean }>> = {
  '/v1/authors': { resources: 'authors', item: false },
  '/v1/authors/:id': { resources: 'authors', item: true },
  '/v1/authors/:id/books': { resources: 'authors', item: true },
  '/v1/books': { resources: 'books', item: false },
  '/v1/books/:id': { resources: 'books', item: true },
  '/v1/books/:id/reviews': { resources: 'books', item: true },
  '/v1/reviews': { resources: 'reviews', item: false },
  '/v1/reviews/:id': { resources: 'reviews', item: true },
  '/v1/webhooks': { resources: 'webhooks', item: false },
  '/v1/webhooks/:id': { resources: 'webhooks', item: true }
}
const successStatus: Readonly<Record<string, number>> = { GET: 200, HEAD: 200, POST: 201, PUT: 200, PATCH: 200, DELETE: 204, OPTIONS: 200 }

/** What the route is, as the configuration sees it. */
function classify (route: CollectedRoute): 'host' | 'public' | 'resource' | 'batch' | 'mcp' | 'feed' | 'monitor' | 'deliveries' | 'retry' | 'preflight-only' {
  if (!route.url.startsWith('/v1')) return 'host'
  if (route.options.config?.public === true) return 'public'
  if (Object.hasOwn(resourcePaths, route.url)) return 'resource'
  // docs/demo-contract.md "Safe retries and atomic writes": each operation is authorized as its own request.
  if (route.url === '/v1/batch' && route.method === 'POST') return 'batch'
  // docs/demo-contract.md "The MCP endpoint": credentials as for the API; each tool call is authorized as its own request (test/mcp.test.ts).
  if (route.url === '/v1/mcp' && route.method === 'POST') return 'mcp'
  // The change feed: every caller reads it, as its rules let it see.
  if (route.url === '/v1/changes') return 'feed'
  // The status monitor of asynchronous work (docs/async.md), asked here of an operation that does not exist.
  if (route.url === '/v1/operations/:id') return 'monitor'
  // A webhook's deliveries (docs/changes.md "Webhooks"): its owner's and the admin's, asked here of dev's subscription.
  if (route.url === '/v1/webhooks/:id/deliveries') return 'deliveries'
  // A dead delivery sent again, asked here of one that does not exist.
  if (route.url === '/v1/webhooks/:id/deliveries/:deliveryId/retry') return 'retry'
  // The hidden `OPTIONS /v1*` (security/cors.ts), there so that preflights to any path find a route.
  if (route.url === '/v1*' && route.method === 'OPTIONS') return 'preflight-only'
  throw new Error(`no expectation written for ${route.method} ${route.url}: add it to the matrix`)
}

/**
 * The status the demo's configuration calls for. Order of the checks (the pipeline's,
 * docs/security.md): Origin (403, spec "Authentication" 6) before credentials (401,
 * "Authentication" 4) before rights (403: `read` allows GET/HEAD/OPTIONS only, `write` and `admin`
 * everything) before the reviews' row rules (403: a visible review that someone else owns is
 * changed only by its owner and `admin`; every review written below belongs to dev-token's user).
 * Public pages need no credentials but keep the Origin check; /health is the host's, outside the
 * API, and checks neither.
 */
function expected (route: CollectedRoute, credential: Credential, origin: OriginKind, publicStatus: number): number {
  const kind = classify(route)
  if (kind === 'host') return publicStatus
  if (origin === 'disallowed') return 403
  if (kind === 'public') return publicStatus
  if (credential === 'anonymous' || credential === 'malformed' || credential === 'wrong' || credential === 'wrongKey') return 401
  if (kind === 'preflight-only') return 404 // authenticated, not a preflight, no resource at that path
  if (kind === 'batch') return credential === 'read' ? 403 : 200
  // Listing the tools is allowed to every caller: a read token is shown the read tools.
  if (kind === 'mcp') return 200
  if (kind === 'feed') return 200
  if (kind === 'monitor') return 404
  // Webhook subscriptions and their deliveries are for callers who may write (demo/app.ts), even to read them.
  if (route.url.startsWith('/v1/webhooks') && credential === 'read') return 403
  // Only dev's own subscription, and the admin's view of all: anyone else finds none (dev-key's user is not dev).
  if (kind === 'deliveries') return credential === 'write' || credential === 'admin' ? 200 : 404
  if (kind === 'retry') return 404
  if (route.url === '/v1/webhooks/:id' && credential === 'writeKey') return 404
  if (credential === 'read' && !readMethods.has(route.method)) return 403
  if (route.url === '/v1/reviews/:id' && !readMethods.has(route.method) && credential !== 'write' && credential !== 'admin') return 403
  return successStatus[route.method]
}

// ---- Requests -------------------------------------------------------------------------------

const write = credentials.write
let serial = 0

/**
 * A fresh author (no books, so DELETE may succeed), book (available, no reviews) or review (not
 * private, of its own fresh book), made with the write token: the review belongs to its user, dev.
 */
async function fresh (resources: Resources, payload: Record<string, unknown> = {}): Promise<string> {
  const author = await app.inject({ method: 'POST', url: '/v1/authors', headers: write, payload: { name: `Author ${serial++}` } })
  const authorId = author.json().data.author.id as string
  if (resources === 'webhooks') return (await app.inject({ method: 'POST', url: '/v1/webhooks', headers: write, payload: { url: 'http://127.0.0.1:9/hook' } })).json().data.webhook.id as string
  if (resources === 'authors') return authorId
  const book = await app.inject({ method: 'POST', url: '/v1/books', headers: write, payload: { title: `Book ${serial++}`, authorId } })
  const bookId = book.json().data.book.id as string
  if (resources === 'books') return bookId
  const review = await app.inject({ method: 'POST', url: '/v1/reviews', headers: write, payload: { bookId, rating: 3, ...payload } })
  return review.json().data.review.id as string
}

/** A valid CREATE, REPLACE or MODIFY body; a review's names a fresh book, which a user has not reviewed yet. */
async function bodyFor (resources: Resources): Promise<Record<string, unknown>> {
  if (resources === 'authors') return { name: `Written ${serial++}` }
  if (resources === 'webhooks') return { url: `http://127.0.0.1:9/hook-${serial++}` }
  if (resources === 'books') return { title: `Written ${serial++}`, authorId: await fresh('authors') }
  return { bookId: await fresh('books'), rating: 4 }
}

/** A concrete request for the route: fresh records for item paths, a valid body for writes. */
async function requestFor (route: CollectedRoute): Promise<InjectOptions & { url: string }> {
  const path = Object.hasOwn(resourcePaths, route.url) ? resourcePaths[route.url] : undefined
  let url = route.url.replace('/v1*', '/v1/no-such-collection').replace(':slug', 'not-found').replace('/v1/operations/:id', '/v1/operations/no-such-operation')
  let payload: Record<string, unknown> | undefined
  if (path !== undefined) {
    if (path.item) url = url.replace(':id', await fresh(path.resources))
    if (route.method === 'POST' || route.method === 'PUT' || route.method === 'PATCH') payload = await bodyFor(path.resources)
  }
  if (classify(route) === 'deliveries' || classify(route) === 'retry') url = url.replace(':id', await fresh('webhooks')).replace(':deliveryId', 'no-such-delivery')
  if (classify(route) === 'batch') payload = { operations: [{ op: 'create', resource: 'authors', data: await bodyFor('authors') }] }
  // MCP Streamable HTTP: a JSON-RPC request, and an Accept of both JSON and an event stream.
  if (classify(route) === 'mcp') return { method: 'POST', url, payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' } }
  return { method: route.method as InjectOptions['method'], url, payload }
}

/** What a client sees that matters here, for one cell. */
function observe (res: LightMyRequestResponse, origin: OriginKind) {
  const problems = []
  if (res.statusCode >= 400 && !/^application\/problem\+json/.test(String(res.headers['content-type']))) problems.push('not problem+json')
  if (res.statusCode === 401 && !/^Bearer realm="demo"/.test(String(res.headers['www-authenticate']))) problems.push('401 without a Bearer challenge')
  const allowOrigin = res.headers['access-control-allow-origin']
  if (allowOrigin === '*') problems.push('Access-Control-Allow-Origin: *')
  if (origin !== 'allowed' && allowOrigin !== undefined) problems.push(`Access-Control-Allow-Origin ${String(allowOrigin)} for a ${origin} origin`)
  return problems
}

t.test('the observed app has exactly the demo\'s routes', async t => {
  const demo = await buildDemoApp(config)
  t.teardown(() => demo.close())
  await demo.ready()
  t.equal(app.printRoutes({ commonPrefix: false }), demo.printRoutes({ commonPrefix: false }))
})

t.test('every route has an expectation, and the contract\'s public addresses are public', async t => {
  const kinds = Object.fromEntries(routes.map(route => [`${route.method} ${route.url}`, classify(route)]))
  t.match(kinds, {
    'GET /health': 'host',
    'GET /v1/openapi.json': 'public',
    'GET /v1/docs': 'public',
    'GET /v1/authors': 'resource',
    'DELETE /v1/books/:id': 'resource',
    'GET /v1/authors/:id/books': 'resource',
    'POST /v1/reviews': 'resource',
    'PATCH /v1/reviews/:id': 'resource',
    'GET /v1/books/:id/reviews': 'resource',
    'POST /v1/batch': 'batch',
    'POST /v1/mcp': 'mcp'
  })
  // The eight operations on the four collections, and the two nested collections: 4 + 6 per resource, + 3 each.
  t.equal(routes.filter(route => classify(route) === 'resource').length, 46)
})

for (const route of routes) {
  t.test(`${route.method} ${route.url}`, async t => {
    // Public pages answer the same to everyone: anonymous and without Origin is the reference.
    const reference = await app.inject(await requestFor(route))
    const publicStatus = reference.statusCode
    if (classify(route) === 'host' || classify(route) === 'public') t.ok(publicStatus < 400, `the page itself answers (${publicStatus})`)
    const want: Record<string, number> = {}
    const got: Record<string, number> = {}
    const headerProblems: Record<string, string[]> = {}
    for (const origin of Object.keys(origins) as OriginKind[]) {
      for (const credential of Object.keys(credentials) as Credential[]) {
        const cell = `${credential} from ${origin} origin`
        const request = await requestFor(route)
        const headers: Record<string, string> = { ...credentials[credential] }
        if (origins[origin] !== undefined) headers.origin = origins[origin] as string
        const res = await app.inject({ ...request, headers: { ...request.headers, ...headers, ...(request.payload === undefined ? {} : { 'content-type': 'application/json' }) } })
        want[cell] = expected(route, credential, origin, publicStatus)
        got[cell] = res.statusCode
        const problems = observe(res, origin)
        if (problems.length > 0) headerProblems[cell] = problems
      }
    }
    t.same(got, want, 'status per credential and origin')
    t.same(headerProblems, {}, 'problem+json errors, Bearer challenges, and Access-Control-Allow-Origin only for the allowed origin')
  })
}

t.test('CORS preflights to every resource path answer without credentials, and only for the allowed origin', async t => {
  const paths = [...new Set(routes.filter(route => classify(route) === 'resource').map(route => route.url))]
  t.equal(paths.length, 10)
  for (const path of paths) {
    const url = path.replace(':id', await fresh(resourcePaths[path].resources))
    const preflight = (origin: string) => app.inject({ method: 'OPTIONS', url, headers: { origin, 'access-control-request-method': 'DELETE', 'access-control-request-headers': 'authorization, content-type' } })
    const allowed = await preflight(origins.allowed)
    // The preflight lists the route's own methods, as its QUERY CAPABILITIES answer does in Allow.
    const capabilities = await app.inject({ method: 'OPTIONS', url, headers: { authorization: 'Bearer dev-token' } })
    t.same({ status: allowed.statusCode, origin: allowed.headers['access-control-allow-origin'], methods: allowed.headers['access-control-allow-methods'] },
      { status: 204, origin: origins.allowed, methods: capabilities.headers.allow }, `${path} from the allowed origin`)
    t.equal((await preflight(origins.disallowed)).statusCode, 403, `${path} from a disallowed origin`)
  }
})

t.test('a private review exists only for its owner and admin: others get 404 on every method, a read token 403 first on writes', async t => {
  const itemRoutes = routes.filter(route => route.url === '/v1/reviews/:id')
  t.equal(itemRoutes.length, 6)
  const want: Record<string, number> = {}
  const got: Record<string, number> = {}
  for (const route of itemRoutes) {
    for (const credential of ['read', 'write', 'writeKey', 'admin'] as const) {
      const cell = `${route.method} by ${credential}`
      const url = route.url.replace(':id', await fresh('reviews', { private: true }))
      const payload = readMethods.has(route.method) || route.method === 'DELETE' ? undefined : await bodyFor('reviews')
      const headers = { ...credentials[credential], ...(payload === undefined ? {} : { 'content-type': 'application/json' }) }
      got[cell] = (await app.inject({ method: route.method as InjectOptions['method'], url, headers, payload })).statusCode
      // Rights come first (a read token may not write at all); then the row rules: not visible, not there.
      if (credential === 'read' && !readMethods.has(route.method)) want[cell] = 403
      else if (credential === 'read' || credential === 'writeKey') want[cell] = 404
      else want[cell] = successStatus[route.method]
    }
  }
  t.same(got, want)
})
