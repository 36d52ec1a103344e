// What the document says against what the server sends (spec "What the service does" 2, 3):
// requests provoke every status the document lists, each answer is listed for its operation, and
// its body validates against the documented schema for its media type with Ajv (JSON Schema
// 2020-12, as OpenAPI 3.1 uses). XML bodies are read by the document's XML Objects, as a
// schema-driven XML client would read them, and must then equal the JSON representation. The
// first app's document is compact, as the demo's: its statuses include those each `default`
// lists in `x-statuses`; the second's is full.
import { connect } from 'node:net'
import t from 'tap'
import type { Test } from 'tap'
import Fastify from 'fastify'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { XMLParser } from 'fast-xml-parser'
import apiConventions, { createClientErrorHandler, errors, memoryStore } from '../lib/index.js'
import type { ApiConventionsOptions, Store } from '../lib/index.js'
import { demoResources } from '../demo/schemas/index.js'
import { auth, testAuth } from './helpers/auth.js'
import { everyStatus, inlined } from './helpers/openapi.js'

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

type Json = Record<string, any>

/** The demo's resources on a store whose next calls can be made to fail. */
function faultyResources (fault: { error?: Error }) {
  return (store: Store) => demoResources(Object.assign(Object.create(store) as Store, {
    async list (...args: Parameters<Store['list']>) {
      if (fault.error !== undefined) throw fault.error
      return store.list(...args)
    }
  }))
}

async function build (t: Test, options: Partial<ApiConventionsOptions>, resources: (store: Store) => ReturnType<typeof demoResources>) {
  const app = Fastify({
    logger: false,
    clientErrorHandler: createClientErrorHandler({ prefix: '/v1', errorFormat: options.errorFormat }),
    http: { maxHeaderSize: 2048, connectionsCheckingInterval: 20 },
    requestTimeout: 150
  })
  t.teardown(() => app.close())
  await app.register(apiConventions, { prefix: '/v1', cursorSecret: 'a-test-secret-of-enough-length', auth: testAuth(), ...options, resources: resources(memoryStore()) } as ApiConventionsOptions)
  await app.ready()
  return app
}

// --- reading XML as the document describes it (OpenAPI 3.1 XML Object) ---

interface XmlElement { readonly name: string, readonly attributes: Record<string, string>, readonly children: XmlElement[], readonly text: string }

const xmlParser = new XMLParser({ preserveOrder: true, ignoreAttributes: false, attributeNamePrefix: '', parseTagValue: false, trimValues: false, ignoreDeclaration: true })

function elementOf (node: Json): XmlElement {
  const name = Object.keys(node).find(key => key !== ':@') as string
  const children = (node[name] as Json[]).filter(child => !('#text' in child)).map(elementOf)
  const text = (node[name] as Json[]).filter(child => '#text' in child).map(child => String(child['#text'])).join('')
  return { name, attributes: node[':@'] ?? {}, children, text }
}

/** Follows `$ref`s into the document; an `xml` beside a `$ref` (an item's name) wins. */
function resolve (document: Json, schema: Json): Json {
  let resolved = schema
  while (typeof resolved.$ref === 'string') {
    const { $ref, ...siblings } = resolved as { $ref: string }
    resolved = { ...document.components.schemas[$ref.slice($ref.lastIndexOf('/') + 1)], ...siblings }
  }
  return resolved
}

/** The documented rule for values whose type the schema leaves open: a `type` attribute on each non-string. */
function freeForm (element: XmlElement): unknown {
  if (element.attributes['xsi:nil'] === 'true') return null
  switch (element.attributes.type) {
    case 'number': return Number(element.text)
    case 'boolean': return element.text === 'true'
    case 'array': return element.children.map(freeForm)
    case 'object': return Object.fromEntries(element.children.map(child => [child.name, freeForm(child)]))
    default: return element.text
  }
}

function fromXml (document: Json, element: XmlElement, given: Json): unknown {
  if (element.attributes['xsi:nil'] === 'true') return null
  const schema = resolve(document, given)
  const variants = (schema.anyOf ?? schema.oneOf) as Json[] | undefined
  if (variants !== undefined) {
    const values = variants.filter(variant => resolve(document, variant).type !== 'null')
    return values.length === 1 ? fromXml(document, element, values[0]) : freeForm(element)
  }
  const types = [schema.type].flat().filter(type => type !== undefined && type !== 'null')
  if (types.length !== 1) return freeForm(element)
  switch (types[0]) {
    case 'array': {
      if (schema.xml?.wrapped !== true) throw new Error(`<${element.name}>: arrays are documented wrapped`)
      const itemName = schema.items.xml?.name ?? resolve(document, schema.items).xml?.name
      return element.children.map(child => {
        if (child.name !== itemName) throw new Error(`<${element.name}> holds <${child.name}>, documented <${itemName}>`)
        return fromXml(document, child, schema.items)
      })
    }
    case 'object': {
      const properties = Object.entries(schema.properties ?? {}) as Array<[string, Json]>
      const value: Json = {}
      for (const child of element.children) {
        const property = properties.find(([name, property]) => (property.xml?.name ?? name) === child.name)
        if (property === undefined && schema.additionalProperties === false) throw new Error(`<${child.name}> is not documented in <${element.name}>`)
        const member = property?.[1] ?? (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : {})
        value[property?.[0] ?? child.name] = fromXml(document, child, member)
      }
      return value
    }
    case 'integer':
    case 'number': return Number(element.text)
    case 'boolean': return element.text === 'true'
    default: return element.text
  }
}

/** An XML body read by its documented schema: the root element and its namespace checked, then as JSON. */
function readXml (t: Test, document: Json, body: string, schema: Json): unknown {
  const root = elementOf((xmlParser.parse(body) as Json[])[0])
  const xml = resolve(document, schema).xml ?? {}
  t.same({ root: root.name, namespace: root.attributes.xmlns }, { root: xml.name, namespace: xml.namespace }, 'the root element as documented')
  return fromXml(document, root, schema)
}

// --- checking answers against the document ---

const pointer = (...parts: string[]) => parts.map(part => part.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')

interface Case {
  readonly name: string
  /** The documented operation: path template and method. */
  readonly path: string
  readonly method: string
  readonly request: InjectOptions
  readonly status: number
  /** The same request asking for JSON, whose body the XML answer must equal. */
  readonly twin?: InjectOptions
}

function checker (document: Json) {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats(ajv)
  ajv.addSchema(document, 'openapi')
  return function check (t: Test, { path, method, status }: Case, res: { statusCode: number, headers: Record<string, unknown>, body: string }, twin?: LightMyRequestResponse) {
    t.equal(res.statusCode, status, 'the status provoked')
    const documented = document.paths[path]?.[method]?.responses?.[String(status)] as Json | undefined
    t.ok(documented, `${method.toUpperCase()} ${path} documents ${status}`)
    if (documented === undefined) return
    const type = String(res.headers['content-type'] ?? '').split(';')[0]
    if (documented.content === undefined) {
      t.same([type, res.body], ['', ''], 'no body, as documented')
      return
    }
    t.ok(documented.content[type], `${type} is documented for ${status}`)
    if (documented.content[type] === undefined) return
    const schema = documented.content[type].schema as Json
    const body = type.endsWith('xml') ? readXml(t, document, res.body, schema) : type === 'text/html' ? res.body : JSON.parse(res.body)
    const validate = ajv.compile({ $ref: `openapi#/${pointer('paths', path, method, 'responses', String(status), 'content', type, 'schema')}` })
    t.ok(validate(body), `the body validates against the documented schema ${JSON.stringify(validate.errors)}`)
    if (twin !== undefined) {
      const json = twin.json()
      t.same(body, type === 'application/problem+xml' && 'errors' in json ? json.errors : json, 'the XML says what the JSON says')
    }
  }
}

async function runCases (t: Test, app: FastifyInstance, cases: readonly Case[], provoked: Set<number>, fault?: { error?: Error, errors?: Record<string, Error> }) {
  const check = checker(everyStatus(inlined((await app.inject({ url: '/v1/openapi.json' })).json())))
  for (const one of cases) {
    await t.test(one.name, async t => {
      if (fault !== undefined) fault.error = fault.errors?.[one.name]
      const res = await app.inject(one.request)
      const twin = one.twin === undefined ? undefined : await app.inject(one.twin)
      check(t, one, res, twin)
      provoked.add(res.statusCode)
    })
  }
}

/** Sends raw bytes and collects what comes back until the server closes the connection. */
function rawExchange (port: number, data: string): Promise<{ statusCode: number, headers: Record<string, unknown>, body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(data))
    let received = ''
    socket.on('data', chunk => { received += String(chunk) })
    socket.on('error', reject)
    socket.on('close', () => {
      const [head, body] = received.split('\r\n\r\n')
      const [statusLine, ...lines] = head.split('\r\n')
      const headers = Object.fromEntries(lines.map(line => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
      resolve({ statusCode: Number(statusLine.split(' ')[1]), headers, body })
    })
  })
}

const statusesOf = (served: Json) => new Set(Object.values(everyStatus(inlined(served)).paths as Json).flatMap(item => Object.values(item as Json).flatMap(operation => Object.keys(operation.responses).map(Number))))

const write = auth.write
const writeJson = auth.writeJson
const asXml = { ...auth.write, accept: 'application/xml' }
const origin = 'https://app.example.com'

t.test('every documented status is sent, every status sent is documented, and each body matches its schema', async t => {
  const fault: { error?: Error, errors?: Record<string, Error> } = {}
  const app = await build(t, { cors: { origins: [origin] }, bodyLimit: 4096, maxQueryLength: 200, openapi: { detail: 'compact' } }, faultyResources(fault))
  fault.errors = {
    '500: a store failure': new Error('the disk is on fire'),
    '500 in XML': new Error('the disk is on fire'),
    '503: the store is unavailable': new errors.StoreUnavailableError()
  }
  const author = (await app.inject({ method: 'POST', url: '/v1/authors', headers: writeJson, payload: { name: 'Janet Frame', born: '1924-08-28', country: 'NZ' } })).json().data.author
  const book = (await app.inject({ method: 'POST', url: '/v1/books', headers: writeJson, payload: { title: 'Owls Do Cry', authorId: author.id, year: 1957, rating: null } })).json().data.book
  const spare = (await app.inject({ method: 'POST', url: '/v1/books', headers: writeJson, payload: { title: 'Faces in the Water', authorId: author.id } })).json().data.book
  const etag = (await app.inject({ url: `/v1/books/${book.id}`, headers: write })).headers.etag as string
  const big = 'x'.repeat(5000)
  const both = (name: string, path: string, method: string, status: number, request: InjectOptions): Case[] => [
    { name, path, method, status, request },
    { name: `${name}, in XML`, path, method, status, request: { ...request, headers: { ...request.headers, accept: 'application/xml' } }, twin: request }
  ]
  const cases: Case[] = [
    ...both('200: a page of books', '/books', 'get', 200, { url: '/v1/books?expand=author&include=author&total=true&offset=0&pageSize=1', headers: write }),
    ...both('200: a book', '/books/{id}', 'get', 200, { url: `/v1/books/${book.id}?include=author`, headers: write }),
    ...both('200: an author and her books', '/authors/{id}', 'get', 200, { url: `/v1/authors/${author.id}?expand=books`, headers: write }),
    ...both('200: a nested collection', '/authors/{id}/books', 'get', 200, { url: `/v1/authors/${author.id}/books`, headers: write }),
    ...both('200: query capabilities', '/books', 'options', 200, { method: 'OPTIONS', url: '/v1/books', headers: write }),
    { name: '201: created', path: '/books', method: 'post', status: 201, request: { method: 'POST', url: '/v1/books', headers: writeJson, payload: { title: 'T', authorId: author.id } } },
    { name: '201: created, in XML', path: '/books', method: 'post', status: 201, request: { method: 'POST', url: '/v1/books', headers: { ...asXml, 'content-type': 'application/xml' }, payload: `<book><title>T</title><authorId>${author.id}</authorId><year>1</year></book>` } },
    { name: '200: replaced, in XML', path: '/books/{id}', method: 'put', status: 200, request: { method: 'PUT', url: `/v1/books/${spare.id}`, headers: { ...asXml, 'content-type': 'application/xml' }, payload: `<book><title>U</title><authorId>${author.id}</authorId></book>` } },
    { name: '200: modified', path: '/books/{id}', method: 'patch', status: 200, request: { method: 'PATCH', url: `/v1/books/${spare.id}`, headers: writeJson, payload: { year: 1961 } } },
    { name: '204: a CORS preflight', path: '/books', method: 'options', status: 204, request: { method: 'OPTIONS', url: '/v1/books', headers: { origin, 'access-control-request-method': 'POST' } } },
    { name: '304: not modified', path: '/books/{id}', method: 'get', status: 304, request: { url: `/v1/books/${book.id}`, headers: { ...write, 'if-none-match': etag } } },
    { name: '304: a collection exists', path: '/books', method: 'get', status: 304, request: { url: '/v1/books', headers: { ...write, 'if-none-match': '*' } } },
    ...both('400: a bad query', '/books', 'get', 400, { url: '/v1/books?pageSize=1000&sort=nope', headers: write }),
    ...both('400: an invalid body', '/books', 'post', 400, { method: 'POST', url: '/v1/books', headers: writeJson, payload: { year: 'soon' } }),
    { name: '400: a bad Date header on the document', path: '/openapi.json', method: 'get', status: 400, request: { url: '/v1/openapi.json', headers: { date: 'yesterday' } } },
    ...both('401: no credentials', '/books', 'get', 401, { url: '/v1/books' }),
    ...both('403: not allowed to write', '/books', 'post', 403, { method: 'POST', url: '/v1/books', headers: auth.readJson, payload: { title: 'T', authorId: author.id } }),
    { name: '403: an Origin not allowed', path: '/books/{id}', method: 'get', status: 403, request: { url: `/v1/books/${book.id}`, headers: { ...write, origin: 'https://evil.example.com' } } },
    ...both('404: no such book', '/books/{id}', 'get', 404, { url: '/v1/books/nope', headers: write }),
    { name: '404: no such problem type', path: '/problems/{slug}', method: 'get', status: 404, request: { url: '/v1/problems/nope' } },
    ...both('405: a method the path does not list', '/books', 'get', 405, { method: 'PUT', url: '/v1/books', headers: writeJson, payload: {} }),
    { name: '406: nothing acceptable', path: '/books', method: 'get', status: 406, request: { url: '/v1/books', headers: { ...write, accept: 'text/html' } } },
    { name: '406: only problem types accepted, in XML', path: '/books', method: 'get', status: 406, request: { url: '/v1/books', headers: { ...write, accept: 'application/problem+xml' } }, twin: { url: '/v1/books', headers: { ...write, accept: 'application/problem+json' } } },
    { name: '406: the document is JSON only', path: '/openapi.json', method: 'get', status: 406, request: { url: '/v1/openapi.json', headers: { accept: 'application/xml' } } },
    { name: '409: an author with books', path: '/authors/{id}', method: 'delete', status: 409, request: { method: 'DELETE', url: `/v1/authors/${author.id}`, headers: write } },
    ...both('412: a stale If-Match', '/books/{id}', 'put', 412, { method: 'PUT', url: `/v1/books/${book.id}`, headers: { ...writeJson, 'if-match': '"nope"' }, payload: { title: 'T', authorId: author.id } }),
    { name: '412: If-None-Match * on a create', path: '/books', method: 'post', status: 412, request: { method: 'POST', url: '/v1/books', headers: { ...writeJson, 'if-none-match': '*' }, payload: { title: 'T', authorId: author.id } } },
    { name: '413: a body too large', path: '/books', method: 'post', status: 413, request: { method: 'POST', url: '/v1/books', headers: writeJson, payload: { title: big } } },
    { name: '413: a DELETE with a large body', path: '/books/{id}', method: 'delete', status: 413, request: { method: 'DELETE', url: `/v1/books/${book.id}`, headers: writeJson, payload: { x: big } } },
    ...both('414: a query string too long', '/books', 'get', 414, { url: `/v1/books?filter=${'x'.repeat(300)}`, headers: write }),
    { name: '414: on the document too', path: '/openapi.json', method: 'get', status: 414, request: { url: `/v1/openapi.json?${'x'.repeat(300)}` } },
    ...both('415: a type not accepted', '/books', 'post', 415, { method: 'POST', url: '/v1/books', headers: { ...write, 'content-type': 'text/plain' }, payload: 'x' }),
    { name: '415: OPTIONS with a body nobody reads', path: '/books', method: 'options', status: 415, request: { method: 'OPTIONS', url: '/v1/books', headers: { ...write, 'content-type': 'text/plain' }, payload: 'x' } },
    { name: '415: DELETE with a body in another charset', path: '/books/{id}', method: 'delete', status: 415, request: { method: 'DELETE', url: `/v1/books/${book.id}`, headers: { ...write, 'content-type': 'application/json; charset=latin1' }, payload: '{}' } },
    ...both('422: an unknown author', '/books', 'post', 422, { method: 'POST', url: '/v1/books', headers: writeJson, payload: { title: 'T', authorId: 'nobody' } }),
    { name: '500: a store failure', path: '/books', method: 'get', status: 500, request: { url: '/v1/books', headers: write } },
    { name: '500 in XML', path: '/books', method: 'get', status: 500, request: { url: '/v1/books', headers: asXml } },
    { name: '503: the store is unavailable', path: '/books', method: 'get', status: 503, request: { url: '/v1/books', headers: write } },
    { name: '200: the document', path: '/openapi.json', method: 'get', status: 200, request: { url: '/v1/openapi.json' } },
    { name: '200: the problem types', path: '/problems', method: 'get', status: 200, request: { url: '/v1/problems' } },
    { name: '204: deleted', path: '/books/{id}', method: 'delete', status: 204, request: { method: 'DELETE', url: `/v1/books/${book.id}`, headers: write } }
  ]
  const provoked = new Set<number>()
  await runCases(t, app, cases, provoked, fault)

  // The connection limits, answered before routing (createClientErrorHandler), over real sockets.
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as { port: number }).port
  const check = checker(everyStatus(inlined((await app.inject({ url: '/v1/openapi.json' })).json())))
  const tooLarge = await rawExchange(port, `GET /v1/books HTTP/1.1\r\nHost: x\r\nX-Big: ${'x'.repeat(3000)}\r\n\r\n`)
  check(t, { name: '431', path: '/books', method: 'get', status: 431, request: {} }, tooLarge)
  const slow = await rawExchange(port, 'GET /v1/books HTTP/1.1\r\nHost: x\r\n')
  check(t, { name: '408', path: '/books', method: 'get', status: 408, request: {} }, slow)
  // Node would answer a bare 417 itself; the plugin makes it a problem like any other refusal.
  const unmet = await rawExchange(port, `GET /v1/books HTTP/1.1\r\nHost: x\r\nExpect: x-custom\r\nAuthorization: ${write.authorization}\r\nConnection: close\r\n\r\n`)
  check(t, { name: '417', path: '/books', method: 'get', status: 417, request: {} }, unmet)
  provoked.add(tooLarge.statusCode).add(slow.statusCode).add(unmet.statusCode)

  // If-Match required, rate limited, envelope errors, flat data and link objects.
  const other = await build(t, { requireIfMatch: true, rateLimit: { max: 5, timeWindow: '1 minute' }, errorFormat: 'envelope', singleResource: 'flat', links: 'object' }, demoResources)
  const someone = (await other.inject({ method: 'POST', url: '/v1/authors', headers: writeJson, payload: { name: 'Hone Tuwhare' } })).json().data
  await runCases(t, other, [
    ...both('200: flat data and link objects', '/authors/{id}', 'get', 200, { url: `/v1/authors/${someone.id}?include=books`, headers: write }),
    { name: '428: If-Match required', path: '/authors/{id}', method: 'put', status: 428, request: { method: 'PUT', url: `/v1/authors/${someone.id}`, headers: { ...writeJson, accept: 'application/xml' }, payload: { name: 'H' } } },
    { name: '429: too many requests', path: '/authors', method: 'get', status: 429, request: { url: '/v1/authors', headers: { ...write, accept: 'application/problem+xml' } } }
  ], provoked)

  // The statuses the compact document gives only in x-statuses were provoked above like the others.
  const compact = (await app.inject({ url: '/v1/openapi.json' })).json()
  t.same(compact.components.responses.default['x-statuses'], [401, 403, 405, 406, 408, 414, 417, 431, 500])
  t.same(Object.keys(compact.paths['/books'].get.responses), ['200', '304', '400', '412', '503', 'default'], 'the first app\'s document is compact')
  const documented = new Set([...statusesOf(compact), ...statusesOf((await other.inject({ url: '/v1/openapi.json' })).json())])
  t.same([...provoked].sort(), [...documented].sort(), 'each documented status was provoked, and only those')
})
