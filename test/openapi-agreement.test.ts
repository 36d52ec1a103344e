// The document and the server agree, both ways (spec "What the service does" 2, 3): every request
// is first judged by the served OpenAPI document alone, as a request validator would (parameters
// read as their style says, scalars coerced by schema, bodies by the requestBody schema), then
// sent; a request the document accepts must not be refused as malformed (400, 415), one it
// refuses must not succeed, and every answer must be a documented status and media type whose
// JSON body validates (XML bodies excepted: openapi-responses.test.ts reads those). A status is
// documented by a response of its own or by the `x-statuses` of the operation's default (the
// demo's document is compact), and on a HEAD by its GET (helpers/openapi.ts everyStatus).
import t from 'tap'
import type { Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { Ajv2020 } from 'ajv/dist/2020.js'
import type { ValidateFunction } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { buildDemoApp } from '../demo/app.js'
import { loadConfig } from '../demo/config.js'
import { everyStatus, inlined } from './helpers/openapi.js'

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

type Json = Record<string, any>

interface Exchange {
  readonly method?: string
  readonly url: string
  readonly headers?: Record<string, string>
  /** Sent as JSON unless a string. */
  readonly payload?: unknown
}

const prefix = '/v1'
const pointer = (...parts: string[]) => parts.map(part => part.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')
const jsonTypes = new Set(['application/json', 'application/merge-patch+json', 'application/problem+json'])
// What a schema cannot say and a description does: the filter grammar, a token's binding to its
// query, which paging parameters combine, a body's id equal to the path's. A 400 naming only these
// is the server applying the prose, not refusing what the schema allows.
// OData's names of these, and `$orderby`, whose syntax is prose as filter's is; giving both names of one option.
const described = new Set(['filter', 'token', 'offset', 'page', 'pageOffset', 'id', '$filter', '$skip', '$orderby'])

/** A query value as the document reads it: the text, or the number or boolean it spells. */
function readings (text: string): unknown[] {
  const values: unknown[] = [text]
  if (text.trim() !== '' && Number.isFinite(Number(text))) values.push(Number(text))
  if (text === 'true' || text === 'false') values.push(text === 'true')
  return values
}

/** Checks each exchange against the served document; collects every disagreement and the operations reached. */
class Agreement {
  readonly disagreements: string[] = []
  readonly reached = new Set<string>()
  readonly #ajv = new Ajv2020({ strict: false, allErrors: true })
  readonly #compiled = new Map<string, ValidateFunction>()
  readonly #templates: Array<{ path: string, pattern: RegExp }>

  constructor (readonly app: FastifyInstance, readonly document: Json) {
    addFormats(this.#ajv)
    this.#ajv.addSchema(document, 'openapi')
    // Literal segments before parameters: /books/{id}/reviews is not /books/{id}.
    this.#templates = Object.keys(document.paths)
      .map(path => ({ path, pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`) }))
      .sort((a, b) => (a.path.match(/\{/g)?.length ?? 0) - (b.path.match(/\{/g)?.length ?? 0))
  }

  #validator (...parts: string[]): ValidateFunction {
    const ref = `openapi#/${pointer(...parts)}`
    let validate = this.#compiled.get(ref)
    if (validate === undefined) this.#compiled.set(ref, validate = this.#ajv.compile({ $ref: ref }))
    return validate
  }

  /** What the document finds wrong with a request; empty when it accepts it. */
  #judgeRequest (where: string[], operation: Json, url: URL, headers: Record<string, string>, body: string | undefined): string[] {
    const wrong: string[] = []
    const parameters = (operation.parameters ?? []) as Json[]
    const query = new Map<string, string[]>()
    for (const [name, value] of url.searchParams) query.set(name, [...(query.get(name) ?? []), value])
    for (const name of query.keys()) {
      if (!parameters.some(parameter => parameter.in === 'query' && parameter.name === name)) wrong.push(`query ${name} is not a parameter`)
    }
    parameters.forEach((parameter, index) => {
      const schema = parameter.schema as Json
      const validate = this.#validator(...where, 'parameters', String(index), 'schema')
      const given = parameter.in === 'query' ? query.get(parameter.name) : parameter.in === 'header' ? [headers[parameter.name.toLowerCase()]].filter(value => value !== undefined) : undefined
      if (given === undefined || given.length === 0) {
        if (parameter.required === true && parameter.in !== 'path') wrong.push(`${parameter.in} ${parameter.name} is required`)
        return
      }
      if (schema.type === 'array') {
        // Style form: with explode (the default) each repetition is an item; without, the items
        // are comma-separated (and repetitions read as one list, as validators such as Prism do).
        const texts = parameter.explode === false ? given.flatMap(text => text.split(',')) : given
        const items = this.#validator(...where, 'parameters', String(index), 'schema', 'items')
        const values = texts.map(text => readings(text).find(value => items(value)) ?? text)
        if (!validate(values)) wrong.push(`${parameter.name}=${given.join('&')}: ${this.#ajv.errorsText(validate.errors)}`)
      } else if (given.length > 1) {
        wrong.push(`${parameter.name} is not a list but is given ${given.length} times`)
      } else if (!readings(given[0]).some(value => validate(value))) {
        wrong.push(`${parameter.in} ${parameter.name}=${given[0]}: ${this.#ajv.errorsText(validate.errors)}`)
      }
    })
    const type = (headers['content-type'] ?? '').split(';')[0].trim()
    const requestBody = operation.requestBody as Json | undefined
    if (body === undefined) {
      if (requestBody?.required === true) wrong.push('a body is required')
    } else if (requestBody?.content?.[type] === undefined) {
      wrong.push(`a body of type ${type} is not documented`)
    } else if (jsonTypes.has(type)) {
      const validate = this.#validator(...where, 'requestBody', 'content', type, 'schema')
      if (!validate(JSON.parse(body))) wrong.push(`body: ${this.#ajv.errorsText(validate.errors)}`)
    }
    return wrong
  }

  /** Sends one request and records where the document and the server part ways; returns the answer. */
  async send (exchange: Exchange) {
    const method = exchange.method ?? 'GET'
    const url = new URL(exchange.url, 'http://localhost')
    const body = exchange.payload === undefined ? undefined : typeof exchange.payload === 'string' ? exchange.payload : JSON.stringify(exchange.payload)
    const headers: Record<string, string> = { ...(body === undefined || typeof exchange.payload === 'string' ? {} : { 'content-type': 'application/json' }), ...exchange.headers }
    const res = await this.app.inject({ method: method as 'GET', url: exchange.url, headers, payload: body })
    const label = `${method} ${exchange.url} → ${res.statusCode}`
    const path = url.pathname.slice(prefix.length)
    const template = this.#templates.find(({ pattern }) => pattern.test(path))?.path
    const operation = template === undefined ? undefined : this.document.paths[template][method.toLowerCase()] as Json | undefined
    if (template === undefined || operation === undefined) {
      this.disagreements.push(`${label}: no documented operation`)
      return res
    }
    this.reached.add(operation.operationId)
    const where = ['paths', template, method.toLowerCase()]

    const wrong = this.#judgeRequest(where, operation, url, headers, body)
    const problem = res.body !== '' && String(res.headers['content-type']).startsWith('application/problem+json') ? res.json() : undefined
    const names: string[] = (problem?.invalidParams ?? []).map((param: Json) => param.name)
    const malformed = res.statusCode === 400 || res.statusCode === 415
    if (wrong.length === 0 && malformed && !(res.statusCode === 400 && names.length > 0 && names.every(name => described.has(name)))) {
      this.disagreements.push(`${label}: the document accepts the request, the server refuses it: ${res.body}`)
    }
    if (wrong.length > 0 && res.statusCode < 400) this.disagreements.push(`${label}: the server accepts a request the document refuses: ${wrong.join('; ')}`)

    const status = String(res.statusCode)
    const response = operation.responses[status] as Json | undefined
    if (response === undefined) {
      this.disagreements.push(`${label}: status not documented`)
      return res
    }
    const type = String(res.headers['content-type'] ?? '').split(';')[0]
    if (res.body === '') {
      // HEAD documents the GET's answers without their bodies.
      if (response.content !== undefined && method !== 'HEAD') this.disagreements.push(`${label}: no body, the document describes one`)
    } else if (response.content?.[type] === undefined) {
      this.disagreements.push(`${label}: ${type} is not documented`)
    } else if (jsonTypes.has(type)) {
      const validate = this.#validator(...where, 'responses', status, 'content', type, 'schema')
      if (!validate(res.json())) this.disagreements.push(`${label}: the body does not match: ${this.#ajv.errorsText(validate.errors)}`)
    }
    return res
  }
}

async function agreement (t: Test, env: Record<string, string> = {}) {
  const app = await buildDemoApp(loadConfig({ STORE: 'memory', SEED: 'false', CURSOR_SECRET: 'a-test-secret-of-enough-length', ...env }))
  t.teardown(() => app.close())
  return new Agreement(app, everyStatus(inlined((await app.inject({ url: `${prefix}/openapi.json` })).json())))
}

const writer = { authorization: 'Bearer dev-token' }
const admin = { authorization: 'Bearer admin-token' }

t.test('every operation, error and paging case: the document and the server agree', async t => {
  const check = await agreement(t)
  const send = async (exchange: Exchange) => await check.send({ ...exchange, headers: { ...writer, ...exchange.headers } })

  // CREATE, with and without defaulted and nullable members.
  const authors = []
  for (const [name, country] of [['Janet Frame', 'NZ'], ['Witi Ihimaera', 'NZ'], ['Alice Munro', 'CA']]) {
    authors.push((await send({ method: 'POST', url: '/v1/authors', payload: { name, country, born: null } })).json().data.author)
  }
  const books = []
  for (let year = 1950; year < 1962; year++) {
    const author = authors[year % 3]
    books.push((await send({ method: 'POST', url: '/v1/books', payload: { title: `Book ${year}`, authorId: author.id, year, ...(year % 2 === 0 ? { available: false, rating: null } : {}) } })).json().data.book)
  }
  const [book, other] = books
  const review = (await send({ method: 'POST', url: '/v1/reviews', headers: admin, payload: { bookId: books[1].id, rating: 4, text: 'Fine.' } })).json().data.review

  // LIST: every parameter, lists and simple filters repeated (the comma form of lists is prose: below).
  for (const query of [
    '', 'sort=-year&sort=title', 'sort=%2Byear', 'fields=title&fields=year',
    'expand=author&include=author&expand=reviews', 'year=1951&year=1953', 'year=null', 'available=true', 'author.country=NZ&author.country=CA',
    'filter=year ge 1955 and author/country eq \'NZ\'', 'total=true&pageSize=0', 'offset=3&pageSize=2', 'pageOffset=2&pageSize=5', 'page=3&pageSize=5',
    `offset=${Number.MAX_SAFE_INTEGER}`, 'rating=null&reviews.rating=4',
    '$filter=year ge 1955&$orderby=year desc,title&$top=2&$skip=1&$select=title&$select=year&$expand=author&$count=true'
  ]) await send({ url: `/v1/books?${query}` })
  await send({ url: '/v1/authors?sort=-name&expand=books&include=books&name=Janet Frame&name=Alice Munro' })
  await send({ url: `/v1/authors/${authors[0].id}/books?sort=year&fields=title` })
  await send({ url: `/v1/books/${book.id}/reviews` })
  await send({ url: '/v1/reviews?sort=-rating', headers: admin })

  // Paging: every next link to the end, then back by prev; in each paging mode.
  for (const first of ['/v1/books?pageSize=5&sort=-year&sort=title&fields=title', '/v1/books?offset=0&pageSize=5&total=true', '/v1/books?pageOffset=1&pageSize=1&year=1950&year=1955&year=1960']) {
    let next: string | undefined = first
    let last = first
    while (next !== undefined) {
      const links: Json[] = (await send({ url: next })).json().links
      last = next
      next = links.find(link => link.rel === 'next')?.href
    }
    const prev = ((await send({ url: last })).json().links as Json[]).find(link => link.rel === 'prev')?.href
    t.ok(prev, `${first} has a previous page`)
    await send({ url: prev as string })
  }

  // RETRIEVE, its headers, conditional requests, capabilities.
  const fetched = await send({ url: `/v1/books/${book.id}?fields=title&fields=year&expand=author` })
  await send({ url: `/v1/books/${book.id}?$select=title&$expand=author` })
  await send({ url: `/v1/books/${book.id}?include=author&include=reviews` })
  for (const url of ['/v1/books?sort=title', `/v1/books/${book.id}`, `/v1/authors/${authors[0].id}/books`, '/v1/authors', `/v1/authors/${authors[0].id}`,
    '/v1/reviews', `/v1/reviews/${review.id}`, `/v1/books/${book.id}/reviews`, '/v1/problems', '/v1/problems/body-invalid']) await send({ method: 'HEAD', url })
  await send({ url: `/v1/books/${book.id}`, headers: { 'if-none-match': fetched.headers.etag as string } })
  for (const url of ['/v1/books', `/v1/books/${book.id}`, `/v1/authors/${authors[0].id}/books`, '/v1/authors', `/v1/authors/${authors[0].id}`, '/v1/reviews', `/v1/reviews/${review.id}`, `/v1/books/${book.id}/reviews`]) {
    await send({ method: 'OPTIONS', url })
  }
  await send({ url: `/v1/authors/${authors[0].id}` })
  await send({ url: `/v1/reviews/${review.id}`, headers: admin })

  // REPLACE (the id repeated or not), MODIFY (null where allowed), DELETE: conditional and not.
  const etag = (await send({ url: `/v1/books/${book.id}` })).headers.etag as string
  const replaced = await send({ method: 'PUT', url: `/v1/books/${book.id}`, headers: { 'if-match': etag }, payload: { id: book.id, title: 'Replaced', authorId: authors[0].id } })
  await send({ method: 'PUT', url: `/v1/authors/${authors[2].id}`, payload: { name: 'Alice Munro', country: 'CA' } })
  await send({ method: 'PATCH', url: `/v1/authors/${authors[1].id}`, headers: { 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ born: '1944-02-07', country: null }) })
  await send({ method: 'PATCH', url: `/v1/books/${book.id}`, headers: { 'content-type': 'application/merge-patch+json', 'if-match': replaced.headers.etag as string }, payload: JSON.stringify({ year: null, rating: 4.5, available: null }) })
  await send({ method: 'PATCH', url: `/v1/books/${other.id}`, headers: { 'content-type': 'application/merge-patch+json', prefer: 'return=minimal' }, payload: JSON.stringify({ id: other.id, title: 'Patched' }) })
  await send({ method: 'PATCH', url: `/v1/reviews/${review.id}`, headers: { ...admin, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ text: null }) })
  await send({ method: 'PUT', url: `/v1/reviews/${review.id}`, headers: admin, payload: { bookId: books[1].id, rating: 5 } })
  await send({ method: 'DELETE', url: `/v1/reviews/${review.id}`, headers: admin })
  await send({ method: 'DELETE', url: `/v1/books/${books[11].id}` })

  // BATCH, and the document and problem type pages.
  await send({
    method: 'POST',
    url: '/v1/batch',
    payload: {
      operations: [
        { op: 'create', resource: 'authors', lid: 'a', data: { name: 'Patricia Grace' } },
        { op: 'create', resource: 'books', lid: 'b', data: { title: 'Potiki', authorId: { lid: 'a' }, year: 1986 } },
        { op: 'modify', resource: 'books', id: { lid: 'b' }, data: { rating: 5 } },
        { op: 'replace', resource: 'books', id: books[2].id, data: { id: books[2].id, title: 'Again', authorId: authors[2].id } },
        { op: 'delete', resource: 'books', id: books[10].id }
      ]
    }
  })
  await send({ url: '/v1/openapi.json' })
  await send({ method: 'HEAD', url: '/v1/openapi.json' })
  await send({ url: '/v1/problems' })
  await send({ url: '/v1/problems/body-invalid' })

  // Refusals the document foresees: each must be refused, and answered as documented.
  const refused: Exchange[] = [
    { url: '/v1/books?pageSize=101' }, { url: '/v1/books?pageSize=1&pageSize=2' }, { url: '/v1/books?filter=a&filter=b' },
    { url: '/v1/books?token=a&token=b' }, { url: '/v1/books?total=maybe' }, { url: '/v1/books?sort=colour' },
    { url: '/v1/books?sort=year&sort=-year' }, { url: '/v1/books?sort=year,year' }, { url: '/v1/books?fields=' }, { url: '/v1/books?expand=nothing' },
    { url: '/v1/books?year=soon' }, { url: '/v1/books?available=yes' }, { url: '/v1/books?colour=red' }, { url: `/v1/books?offset=${Number.MAX_SAFE_INTEGER + 1}` },
    { url: '/v1/books?offset=-1' }, { url: '/v1/books?page=0' }, { url: `/v1/books/${book.id}?sort=title` }, { url: `/v1/books/${book.id}?fields=colour` },
    { url: '/v1/books?$top=101' }, { url: '/v1/books?$count=maybe' }, { url: '/v1/books?$select=colour' }, { url: '/v1/books?$orderby=year,year desc' },
    { url: '/v1/books?$filter=year gt 1&filter=year gt 1' }, { url: `/v1/books/${book.id}?$expand=nothing` },
    { method: 'POST', url: '/v1/books', payload: { id: 'mine', title: 'T', authorId: authors[0].id } },
    { method: 'POST', url: '/v1/books', payload: { title: 'T', authorId: authors[0].id, reviewCount: 3 } },
    { method: 'POST', url: '/v1/books', payload: { title: '', authorId: authors[0].id } },
    { method: 'POST', url: '/v1/books', payload: { authorId: authors[0].id } },
    { method: 'POST', url: '/v1/books', payload: { title: 'T', authorId: authors[0].id, rating: 6 } },
    { method: 'POST', url: '/v1/authors', payload: { name: 'N', country: 'nz' } },
    { method: 'POST', url: '/v1/authors', payload: { name: 'N', born: '1924-13-45' } },
    { method: 'POST', url: '/v1/books', headers: { 'content-type': 'text/plain' }, payload: 'title' },
    { method: 'PUT', url: `/v1/books/${other.id}`, payload: { id: 'another', title: 'T', authorId: authors[0].id } },
    { method: 'PUT', url: `/v1/books/${other.id}`, payload: { title: 'T' } },
    { method: 'PATCH', url: `/v1/books/${other.id}`, headers: { 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ title: null }) },
    { method: 'PATCH', url: `/v1/books/${other.id}`, headers: { 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ averageRating: 3 }) },
    { method: 'PATCH', url: `/v1/reviews/${review.id}`, headers: { ...admin, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ rating: null }) },
    { method: 'POST', url: '/v1/batch', payload: { operations: [] } },
    { method: 'POST', url: '/v1/batch', payload: { operations: [{ op: 'create', resource: 'books', data: { title: 'T' } }] } },
    { method: 'POST', url: '/v1/authors', headers: { 'x-audit-user': 'not base64!' }, payload: { name: 'N' } },
    { url: '/v1/changes?after=x&wait=31' }
  ]
  for (const exchange of refused) {
    const res = await send(exchange)
    t.ok(res.statusCode >= 400 && res.statusCode < 500, `${exchange.method ?? 'GET'} ${exchange.url} is refused (${res.statusCode})`)
  }

  // Asynchronous work: the 202 of each kind of write, its status monitor (and its headers), an unknown one.
  const accepted = await send({ method: 'POST', url: '/v1/authors', headers: { prefer: 'respond-async' }, payload: { name: 'Later' } })
  await send({ method: 'PATCH', url: `/v1/books/${other.id}`, headers: { prefer: 'respond-async', 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ year: 1999 }) })
  await send({ method: 'DELETE', url: `/v1/books/${books[11].id}`, headers: { prefer: 'respond-async' } })
  await send({ url: accepted.headers.location as string })
  await send({ method: 'HEAD', url: accepted.headers.location as string })
  await send({ url: '/v1/operations/nope' })

  // Errors of state: not found, conflicts, failed preconditions, unprocessable, unauthenticated.
  await send({ url: '/v1/books/nope' })
  await send({ method: 'HEAD', url: '/v1/books/nope' })
  await send({ url: '/v1/changes?pageSize=2' })
  await send({ method: 'HEAD', url: '/v1/changes' })
  await send({ url: '/v1/authors/nope/books' })
  await send({ url: '/v1/problems/nope' })
  await send({ method: 'DELETE', url: `/v1/authors/${authors[0].id}` })
  await send({ method: 'PATCH', url: `/v1/books/${other.id}`, headers: { 'content-type': 'application/merge-patch+json', 'if-match': '"999"' }, payload: JSON.stringify({ year: 2000 }) })
  await send({ method: 'POST', url: '/v1/books', headers: { 'if-none-match': '*' }, payload: { title: 'T', authorId: authors[0].id } })
  await send({ method: 'POST', url: '/v1/books', payload: { title: 'T', authorId: 'nobody' } })
  await send({ url: '/v1/books', headers: { authorization: 'Bearer wrong' } })
  await send({ method: 'POST', url: '/v1/books', headers: { authorization: 'Bearer read-token' }, payload: { title: 'T', authorId: authors[0].id } })

  // Webhooks: the subscriptions (a resource), a refused URL, their deliveries, a retry of none.
  const webhook = (await send({ method: 'POST', url: '/v1/webhooks', payload: { url: 'http://127.0.0.1:9/hook', resources: ['books'] } })).json().data.webhook
  const hooked = `/v1/webhooks/${webhook.id}`
  for (const url of ['/v1/webhooks', hooked, `${hooked}/deliveries?pageSize=5`]) {
    for (const method of ['GET', 'HEAD']) await send({ method, url })
  }
  for (const url of ['/v1/webhooks', hooked]) await send({ method: 'OPTIONS', url })
  await send({ method: 'PUT', url: hooked, payload: { url: 'http://127.0.0.1:9/other', resources: null } })
  await send({ method: 'PATCH', url: hooked, headers: { 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ active: false }) })
  await send({ method: 'POST', url: '/v1/webhooks', payload: { url: 'http://example.com/hook' } })
  await send({ url: `${hooked}/deliveries?pageSize=0` })
  await send({ method: 'POST', url: `${hooked}/deliveries/nope/retry` })
  await send({ method: 'DELETE', url: hooked })

  const operations = Object.values(check.document.paths as Json).flatMap(item => Object.values(item as Json).map(operation => operation.operationId as string))
  t.same(operations.filter(id => !check.reached.has(id)), [], 'every documented operation is exercised')
  t.same(check.disagreements, [], 'no disagreement')
})

t.test('with If-Match required, the document says so and the server enforces it', async t => {
  const check = await agreement(t, { REQUIRE_IF_MATCH: 'true' })
  const author = (await check.send({ method: 'POST', url: '/v1/authors', headers: writer, payload: { name: 'Hone Tuwhare' } })).json().data.author
  const refused = await check.send({ method: 'PUT', url: `/v1/authors/${author.id}`, headers: writer, payload: { name: 'H' } })
  t.equal(refused.statusCode, 428)
  const etag = (await check.send({ url: `/v1/authors/${author.id}`, headers: writer })).headers.etag as string
  t.equal((await check.send({ method: 'PUT', url: `/v1/authors/${author.id}`, headers: { ...writer, 'if-match': etag }, payload: { name: 'H' } })).statusCode, 200)
  t.same(check.disagreements, [])
})
