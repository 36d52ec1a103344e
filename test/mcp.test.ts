// The MCP endpoint (docs/demo-contract.md "The MCP endpoint", docs/mcp.md), from outside with the
// official SDK's client over Streamable HTTP, against the demo listening on a port: each tool call
// gives what the same HTTP request gives the same caller (rows, fields, refusals as problems),
// If-Match and Idempotency-Key hold, credentials are required, and the tool list stays small.
import t from 'tap'
import type { Test } from 'tap'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import apiConventions, { defineResource, memoryStore } from '../lib/index.js'
import type { ApiConventionsOptions } from '../lib/index.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { buildDemoApp } from '../demo/app.js'
import { loadConfig } from '../demo/config.js'
import { open } from './helpers/demo-http.js'
import type { Api } from './helpers/demo-http.js'

const tokenOf: Record<string, string> = { reader: 'read-token', alice: 'alice-token', bob: 'bob-token', admin: 'admin-token' }
const callers = ['alice', 'bob', 'admin', 'reader'] as const

interface Called { readonly isError: boolean, readonly body: any, readonly facts: { status: number, etag?: string, location?: string, replayed?: true } }

/** An MCP client of `caller` connected to the demo at `base`; closed when the test ends. */
async function connect (t: Test, base: string, caller: string) {
  const client = new Client({ name: 'mcp-test', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${tokenOf[caller]}` } } })
  await client.connect(transport)
  t.teardown(() => client.close())
  return {
    client,
    /** A tool call's result: the body (the HTTP answer's JSON, or undefined without one) and the facts after it. */
    async call (name: string, args: Record<string, unknown>): Promise<Called> {
      const result = await client.callTool({ name, arguments: args })
      const texts = (result.content as Array<{ type: string, text: string }>).map(item => JSON.parse(item.text))
      return { isError: result.isError === true, body: texts.length === 2 ? texts[0] : undefined, facts: texts[texts.length - 1] }
    }
  }
}

/** The demo (memory store) on a port, with an author, a book, a public review by alice and a private one with a moderator's note. */
async function demo (t: Test) {
  const instance = await open({ env: { STORE: 'memory' }, keeps: false, drop: async () => {} })
  t.teardown(() => instance.close())
  const api: Api = instance.api
  const author = (await api('alice', 'POST', '/v1/authors', { body: { name: 'Ursula K. Le Guin' } })).body.data.author
  const book = (await api('alice', 'POST', '/v1/books', { body: { title: 'The Dispossessed', authorId: author.id, year: 1974, available: true } })).body.data.book
  const other = (await api('alice', 'POST', '/v1/books', { body: { title: 'The Lathe of Heaven', authorId: author.id, year: 1971, available: true } })).body.data.book
  const open_ = (await api('alice', 'POST', '/v1/reviews', { body: { bookId: book.id, rating: 5, text: 'Anarres.' } })).body.data.review
  const hidden = (await api('alice', 'POST', '/v1/reviews', { body: { bookId: other.id, rating: 3, private: true } })).body.data.review
  const noted = await api('admin', 'PATCH', `/v1/reviews/${hidden.id as string}`, { body: { moderatorNote: 'checked' } })
  t.equal(noted.status, 200, 'the admin notes the private review')
  return { base: instance.base, api, author, book, reviews: { open: open_, hidden } }
}

t.test('each caller gets through MCP the data HTTP gives it for the same requests', async t => {
  const { base, api, reviews } = await demo(t)
  for (const caller of callers) {
    const mcp = await connect(t, base, caller)
    const listed = await mcp.call('list', { resource: 'reviews', sort: 'rating' })
    const overHttp = await api(caller, 'GET', '/v1/reviews?sort=rating')
    t.same({ isError: listed.isError, status: listed.facts.status, body: listed.body }, { isError: false, status: 200, body: overHttp.body }, `${caller}: list reviews`)

    const got = await mcp.call('get', { resource: 'reviews', id: reviews.hidden.id })
    const gotHttp = await api(caller, 'GET', `/v1/reviews/${reviews.hidden.id as string}`)
    t.same({ isError: got.isError, status: got.facts.status, body: got.body }, { isError: gotHttp.status >= 400, status: gotHttp.status, body: gotHttp.body }, `${caller}: get the private review`)
    if (!got.isError) t.equal(got.facts.etag, gotHttp.headers.get('etag'), `${caller}: the ETag comes with it`)

    const apply = 'groupby((bookId),aggregate($count as n,rating with average as avg))'
    const grouped = await mcp.call('aggregate', { resource: 'reviews', apply, filter: 'rating ge 1' })
    const groupedHttp = await api(caller, 'GET', `/v1/reviews?apply=${encodeURIComponent(apply)}&filter=${encodeURIComponent('rating ge 1')}`)
    t.same({ isError: grouped.isError, status: grouped.facts.status, body: grouped.body }, { isError: false, status: 200, body: groupedHttp.body }, `${caller}: aggregate reviews`)
    t.equal(grouped.body.data.reviews.length, caller === 'alice' || caller === 'admin' ? 2 : 1, `${caller}: counts only the reviews it may see`)
  }
})

t.test('the rules decide: a private review is not found for others, moderatorNote is only the admin\'s', async t => {
  const { base, reviews } = await demo(t)
  const seen: Record<string, unknown> = {}
  for (const caller of callers) {
    const mcp = await connect(t, base, caller)
    const got = await mcp.call('get', { resource: 'reviews', id: reviews.hidden.id })
    const listed = await mcp.call('list', { resource: 'reviews' })
    const described = await mcp.call('describe', { resource: 'reviews' })
    seen[caller] = {
      get: got.isError ? got.body.status : Object.keys(got.body.data.review).includes('moderatorNote') ? 'with note' : 'without note',
      listed: listed.body.data.reviews.length,
      describes: Object.keys(described.body.resources.reviews.fields).includes('moderatorNote')
    }
  }
  t.same(seen, {
    alice: { get: 'without note', listed: 2, describes: false },
    bob: { get: 404, listed: 1, describes: false },
    admin: { get: 'with note', listed: 2, describes: true },
    reader: { get: 404, listed: 1, describes: false }
  })
})

t.test('a refused call is a tool error holding the problem the HTTP request gets', async t => {
  const { base, api, book } = await demo(t)
  const reader = await connect(t, base, 'reader')
  const refused = await reader.call('create', { resource: 'authors', data: { name: 'Nobody' } })
  const refusedHttp = await api('reader', 'POST', '/v1/authors', { body: { name: 'Nobody' } })
  t.same({ isError: refused.isError, body: refused.body }, { isError: true, body: refusedHttp.body }, 'a read token may not create: 403')
  t.equal(refused.body.status, 403)

  const alice = await connect(t, base, 'alice')
  const bad = await alice.call('list', { resource: 'books', filter: 'year eq', sort: 'nope' })
  const badHttp = await api('alice', 'GET', '/v1/books?filter=year%20eq&sort=nope')
  t.same({ isError: bad.isError, body: bad.body }, { isError: true, body: badHttp.body }, 'a bad query: 400 naming each parameter')
  t.same(bad.body.invalidParams.map((param: { name: string }) => param.name).sort(), ['filter', 'sort'])

  const twice = await alice.call('create', { resource: 'reviews', data: { bookId: book.id, rating: 2 } })
  t.match(twice, { isError: true, body: { status: 409 } }, 'a business rule refuses a second review of one book')

  const unknown = await alice.call('get', { resource: 'films', id: 'x' })
  t.match(unknown, { isError: true, body: { status: 404, instance: '/v1/films' } }, 'an unknown resource is not found')

  const malformed = await alice.call('list', { resource: 'books', pageSize: 'ten', color: 'red' })
  t.match(malformed, { isError: true, body: { status: 400, invalidParams: [{ name: 'pageSize', reason: 'must be integer' }, { name: 'color', reason: 'is not an argument of this tool' }] } }, 'arguments of the wrong shape are a 400 naming each')
})

t.test('a stale ifMatch is a tool error with status 412, and nothing is written', async t => {
  const { base, api, book } = await demo(t)
  const alice = await connect(t, base, 'alice')
  const before = await api('alice', 'GET', `/v1/books/${book.id as string}`)
  const stale = await alice.call('update', { resource: 'books', id: book.id, data: { title: 'Changed' }, ifMatch: '"999"' })
  t.match(stale, { isError: true, body: { status: 412 } })
  const after = await api('alice', 'GET', `/v1/books/${book.id as string}`)
  t.same([after.body, after.headers.get('etag')], [before.body, before.headers.get('etag')], 'the book is unchanged')

  const fresh = await alice.call('update', { resource: 'books', id: book.id, data: { title: 'Changed' }, ifMatch: before.headers.get('etag') })
  t.match(fresh, { isError: false, body: { data: { book: { title: 'Changed' } } }, facts: { status: 200 } }, 'the current ETag writes')
  t.not(fresh.facts.etag, before.headers.get('etag'))
  const malformed = await alice.call('delete', { resource: 'books', id: book.id, ifMatch: 'no quotes' })
  t.match(malformed, { isError: true, body: { status: 400, invalidParams: [{ name: 'ifMatch' }] } }, 'a malformed ifMatch is a 400 naming it')
})

t.test('an idempotencyKey repeated makes one record, and the repeat answers the first result', async t => {
  const { base, api } = await demo(t)
  const alice = await connect(t, base, 'alice')
  const args = { resource: 'authors', data: { name: 'Keyed Once' }, idempotencyKey: 'mcp-key-1' }
  const first = await alice.call('create', args)
  const again = await alice.call('create', args)
  t.match(first, { isError: false, facts: { status: 201 } })
  t.same(again.body, first.body, 'the same record')
  t.equal(again.facts.replayed, true, 'said to be replayed')
  t.notOk(first.facts.replayed)
  const listed = await api('alice', 'GET', `/v1/authors?filter=${encodeURIComponent("name eq 'Keyed Once'")}`)
  t.equal(listed.body.data.authors.length, 1, 'one author written')
  const other = await alice.call('create', { ...args, data: { name: 'Another' } })
  t.match(other, { isError: true, body: { status: 422 } }, 'the key with other data is refused')

  const patch = { resource: 'authors', id: first.body.data.author.id, data: { name: 'Keyed Twice' }, idempotencyKey: 'mcp-key-2' }
  const changed = await alice.call('update', patch)
  const changedAgain = await alice.call('update', patch)
  t.match([changed, changedAgain], [{ isError: false, facts: { status: 200 } }, { isError: false, facts: { status: 200, replayed: true } }], 'an update under a key is replayed too')
  t.same(changedAgain.body, changed.body)
})

t.test('delete answers 204 as a result without a body', async t => {
  const { base, api, author } = await demo(t)
  const alice = await connect(t, base, 'alice')
  const made = await alice.call('create', { resource: 'authors', data: { name: 'Short-lived' } })
  const deleted = await alice.call('delete', { resource: 'authors', id: made.body.data.author.id })
  t.same(deleted, { isError: false, body: undefined, facts: { status: 204 } })
  t.equal((await api('alice', 'GET', `/v1/authors/${made.body.data.author.id as string}`)).status, 404)
  t.match(await alice.call('delete', { resource: 'authors', id: author.id }), { isError: true, body: { status: 409 } }, 'an author with books cannot be deleted')
})

t.test('without credentials the endpoint answers 401 with a Bearer challenge', async t => {
  const { base } = await demo(t)
  const res = await fetch(`${base}/v1/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
  })
  t.equal(res.status, 401)
  t.match(res.headers.get('www-authenticate'), /^Bearer realm="demo"/)
  t.match(res.headers.get('content-type'), /^application\/problem\+json/)
  const client = new Client({ name: 'mcp-test', version: '1.0.0' })
  await t.rejects(client.connect(new StreamableHTTPClientTransport(new URL(`${base}/v1/mcp`))), 'the SDK client cannot connect')
})

t.test('a read token sees no write tools; a write token sees them, with annotations', async t => {
  const { base } = await demo(t)
  const names = async (caller: string) => (await (await connect(t, base, caller)).client.listTools()).tools.map(tool => tool.name)
  t.same(await names('reader'), ['describe', 'list', 'get', 'aggregate'])
  t.same(await names('alice'), ['describe', 'list', 'get', 'aggregate', 'create', 'update', 'delete'])
  const tools = (await (await connect(t, base, 'alice')).client.listTools()).tools
  const hints = Object.fromEntries(tools.map(tool => [tool.name, [tool.annotations?.readOnlyHint, tool.annotations?.destructiveHint, tool.annotations?.idempotentHint]]))
  t.same(hints, {
    describe: [true, false, true],
    list: [true, false, true],
    get: [true, false, true],
    aggregate: [true, false, true],
    create: [false, false, false],
    update: [false, true, false],
    delete: [false, true, true]
  })
  t.same(tools.find(tool => tool.name === 'list')?.inputSchema.properties?.resource, { type: 'string', enum: ['authors', 'books', 'reviews', 'webhooks'] })
})

t.test('the demo\'s tool list stays under 4,000 tokens (characters / 4)', async t => {
  const { base } = await demo(t)
  for (const caller of ['admin', 'reader']) {
    const listed = await (await connect(t, base, caller)).client.listTools()
    const tokens = Math.ceil(JSON.stringify(listed).length / 4)
    t.comment(`tools/list for ${caller}: ${JSON.stringify(listed).length} characters, about ${tokens} tokens`)
    t.ok(tokens < 4000, `${caller}: about ${tokens} tokens`)
  }
})

t.test('describe summarises the resources as the caller may see them', async t => {
  const { base } = await demo(t)
  const reader = await connect(t, base, 'reader')
  const described = await reader.call('describe', {})
  t.same(Object.keys(described.body.resources), ['authors', 'books', 'reviews'])
  t.match(described.body.resources.books, {
    singular: 'book',
    tools: ['list', 'get'],
    fields: { id: /^string, id/, title: /^string, required/ },
    relations: { author: 'one authors by authorId', reviews: 'many reviews by reviews.bookId' },
    pageSize: { default: 20, max: 100 }
  })
  t.match(described.body.filter, /OData \$filter/)
  t.ok(JSON.stringify(described.body).length < 8000, 'small')
  t.match(await reader.call('describe', { resource: 'films' }), { isError: true, body: { status: 404 } })
})

t.test('MCP=false serves no endpoint: 404', async t => {
  const app = await buildDemoApp(loadConfig({ STORE: 'memory', MCP: 'false', CURSOR_SECRET: 'a-test-secret-of-enough-length' }), { logger: false })
  t.teardown(() => app.close())
  const res = await app.inject({ method: 'POST', url: '/v1/mcp', headers: { authorization: 'Bearer alice-token', 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' } })
  t.equal(res.statusCode, 404)
  t.match(res.headers['content-type'], /^application\/problem\+json/)
})

t.test('the mcp option: true or { instructions }, anything else refused at registration', async t => {
  const { resolveMcp } = await import('../lib/mcp/options.js')
  t.equal(resolveMcp(undefined), null)
  t.equal(resolveMcp(false), null)
  t.same(resolveMcp(true), { instructions: undefined })
  t.same(resolveMcp({ instructions: 'Books and their reviews.' }), { instructions: 'Books and their reviews.' })
  t.throws(() => resolveMcp('yes'), { code: 'API_ERR_OPTIONS_INVALID', message: /mcp must be a boolean or an object \{ instructions\? \}, received "yes"/ })
  t.throws(() => resolveMcp(null), { message: /mcp must be a boolean or an object/ })
  t.throws(() => resolveMcp({ instructions: ' ' }), { message: /mcp.instructions must be a non-empty string, received " "/ })
})

t.test('what is not MCP over Streamable HTTP is refused as a problem', async t => {
  const app = await buildDemoApp(loadConfig({ STORE: 'memory', CURSOR_SECRET: 'a-test-secret-of-enough-length' }), { logger: false })
  t.teardown(() => app.close())
  const headers = { authorization: 'Bearer alice-token', 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
  const post = (extra: Record<string, string>, payload: unknown = { jsonrpc: '2.0', id: 1, method: 'tools/list' }) => app.inject({ method: 'POST', url: '/v1/mcp', headers: { ...headers, ...extra }, payload: payload as object })
  const seen = (res: Awaited<ReturnType<typeof post>>) => ({ status: res.statusCode, type: String(res.headers['content-type']).split(';')[0], allow: res.headers.allow, invalidParams: res.json().invalidParams })

  t.same(seen(await app.inject({ method: 'GET', url: '/v1/mcp', headers })), { status: 405, type: 'application/problem+json', allow: 'POST', invalidParams: undefined }, 'GET: no event stream is offered')
  t.same(seen(await app.inject({ method: 'DELETE', url: '/v1/mcp', headers })), { status: 405, type: 'application/problem+json', allow: 'POST', invalidParams: undefined }, 'DELETE: no session to end')
  t.match(seen(await post({ accept: 'application/json' })), { status: 406, type: 'application/problem+json' }, 'an Accept without text/event-stream')
  t.match(seen(await post({ 'mcp-protocol-version': '1999-01-01' })), { status: 400, type: 'application/problem+json', invalidParams: [{ name: 'MCP-Protocol-Version' }] }, 'an unsupported protocol version')
  t.match(seen(await post({}, { hello: 'world' })), { status: 400, type: 'application/problem+json', invalidParams: [{ name: 'body' }] }, 'JSON that is no JSON-RPC message')
  t.match(seen(await post({ 'content-type': 'text/plain' }, 'hello')), { status: 415, type: 'application/problem+json' }, 'a body that is not JSON')

  const listed = await post({ 'mcp-protocol-version': '2025-06-18' })
  t.same({ status: listed.statusCode, type: String(listed.headers['content-type']).split(';')[0], nosniff: listed.headers['x-content-type-options'], requestId: typeof listed.headers['request-id'] }, { status: 200, type: 'application/json', nosniff: 'nosniff', requestId: 'string' }, 'an answer with the security headers of any other route')
  t.match(listed.json(), { jsonrpc: '2.0', id: 1, result: { tools: [{ name: 'describe' }] } })
  const notified = await post({ 'mcp-protocol-version': '2025-06-18' }, { jsonrpc: '2.0', method: 'notifications/initialized' })
  t.same([notified.statusCode, notified.body], [202, ''], 'a notification is accepted without a body')
})

/** The plugin alone on a memory store, with books and secrets; `options` adds to it. */
async function plainApp (t: Test, options: Partial<ApiConventionsOptions>): Promise<FastifyInstance> {
  const Item = Type.Object({ id: Type.Readonly(Type.String()), title: Type.String() }, { additionalProperties: false })
  const store = memoryStore()
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(apiConventions, {
    prefix: '/api',
    cursorSecret: 'a-test-secret-of-enough-length',
    resources: ['books', 'secrets'].map(name => defineResource({ name, singular: name.slice(0, -1), schema: Item, store })),
    ...options
  })
  return app
}

/** One JSON-RPC request to the app's MCP endpoint, with `headers`: its result, or its error. */
async function rpc (app: FastifyInstance, headers: Record<string, string>, method: string, params: Record<string, unknown> = {}) {
  const res = await app.inject({ method: 'POST', url: '/api/mcp', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, payload: { jsonrpc: '2.0', id: 1, method, params } })
  return res.json()
}

t.test('the tools a caller sees name the resources auth.authorize allows it; a call elsewhere is its refusal', async t => {
  const app = await plainApp(t, {
    auth: { bearer: token => ({ id: token, admin: token === 'admin' }), authorize: ({ resource, principal }) => resource !== 'secrets' || (principal as { admin: boolean }).admin },
    mcp: { instructions: 'Books, and secrets for admins.' }
  })
  const guest = { authorization: 'Bearer guest' }
  const init = await rpc(app, guest, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } })
  t.match(init.result, { instructions: 'Books, and secrets for admins.', serverInfo: { name: 'HTTP JSON API', version: '1.0.0' }, capabilities: { tools: {} } }, 'the instructions, and the API\'s name')
  const enums = (listed: { result: { tools: Array<{ name: string, inputSchema: { properties: { resource: { enum: string[] } } } }> } }) => Object.fromEntries(listed.result.tools.map(tool => [tool.name, tool.inputSchema.properties.resource.enum]))
  const all = ['books', 'secrets']
  t.same(enums(await rpc(app, guest, 'tools/list')), { describe: ['books'], list: ['books'], get: ['books'], aggregate: ['books'], create: ['books'], update: ['books'], delete: ['books'] })
  t.same(enums(await rpc(app, { authorization: 'Bearer admin' }, 'tools/list')), { describe: all, list: all, get: all, aggregate: all, create: all, update: all, delete: all })

  const described = await rpc(app, guest, 'tools/call', { name: 'describe', arguments: { resource: 'secrets' } })
  t.match(described.result, { isError: true }, 'describe of a resource the caller may not read')
  t.match(JSON.parse(described.result.content[0].text), { status: 403, detail: 'These credentials do not allow listing secrets.', instance: '/api/secrets' })
  const listed = await rpc(app, guest, 'tools/call', { name: 'list', arguments: { resource: 'secrets' } })
  t.match(JSON.parse(listed.result.content[0].text), { status: 403 }, 'and its list')
  const everything = await rpc(app, guest, 'tools/call', { name: 'describe' })
  t.same(Object.keys(JSON.parse(everything.result.content[0].text).resources), ['books'], 'describe without arguments: every resource the caller may read')
  t.match(await rpc(app, guest, 'tools/call', { name: 'search', arguments: {} }), { error: { code: -32602, message: /Unknown tool: search/ } }, 'a tool that does not exist is a protocol error')
})

t.test('without authorization checks every tool names every resource', async t => {
  const app = await plainApp(t, { mcp: true })
  const listed = await rpc(app, {}, 'tools/list')
  t.same(listed.result.tools.map((tool: { inputSchema: { properties: { resource: { enum: string[] } } } }) => tool.inputSchema.properties.resource.enum), Array(7).fill(['books', 'secrets']))
  const made = await rpc(app, {}, 'tools/call', { name: 'create', arguments: { resource: 'secrets', data: { title: 'Open' } } })
  t.match(JSON.parse(made.result.content[1].text), { status: 201, location: /^\/api\/secrets\// })
  const res = await app.inject({ method: 'POST', url: '/api/mcp', headers: { 'content-type': 'application/json' }, payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' } })
  t.match({ status: res.statusCode, body: res.json() }, { status: 406, body: { status: 406 } }, 'a request without Accept: MCP needs both JSON and event streams accepted')
})

t.test('the rate limit counts MCP requests as any other request of the caller', async t => {
  const app = await plainApp(t, { auth: { bearer: token => ({ id: token }) }, rateLimit: { max: 2, timeWindow: '1 minute' }, mcp: true })
  const statuses = []
  for (let i = 0; i < 3; i++) {
    const res = await app.inject({ method: 'POST', url: '/api/mcp', headers: { authorization: 'Bearer one', 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' } })
    statuses.push(res.statusCode)
  }
  t.same(statuses, [200, 200, 429])
  t.equal((await app.inject({ url: '/api/books', headers: { authorization: 'Bearer one' } })).statusCode, 429, 'and the API\'s requests with them')
})
