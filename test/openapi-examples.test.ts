// The example bodies of the OpenAPI document (docs/openapi.md "What is documented"): every
// documented write body carries one on its JSON media types, and the server takes each as it
// stands (its own validator: the bodies are sent), but for a relation's id, which only names an
// existing record once replaced. Made from the schema: its own examples and defaults, else its
// type, format, enum, bounds and simple pattern.
import t from 'tap'
import type { Test } from 'tap'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { Type } from '@sinclair/typebox'
import type { TSchema } from '@sinclair/typebox'
import { buildDemoApp } from '../demo/app.js'
import { loadConfig } from '../demo/config.js'
import { defineResource } from '../lib/index.js'
import type { Store } from '../lib/index.js'
import { exampleOf } from '../lib/openapi/examples.js'
import { createAjv } from '../lib/validation.js'
import { buildApp } from './helpers/app.js'
import type { FastifyInstance } from 'fastify'

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

type Json = Record<string, any>

const jsonTypes = ['application/json', 'application/merge-patch+json']

/**
 * Each write body's example by `METHOD path`, from the document; every JSON media type of a body
 * must carry the same one, valid against the body's documented schema (JSON Schema 2020-12).
 */
async function examplesOf (t: Test, app: FastifyInstance, prefix = '/v1'): Promise<Map<string, Json>> {
  const document = JSON.parse((await app.inject({ url: `${prefix}/openapi.json` })).body)
  const documented = new Ajv2020({ strict: false, allErrors: true })
  addFormats(documented)
  documented.addSchema(document, 'openapi')
  const examples = new Map<string, Json>()
  for (const [path, item] of Object.entries<Json>(document.paths)) {
    for (const [method, operation] of Object.entries<Json>(item)) {
      const content = operation.requestBody?.content as Json | undefined
      if (content === undefined) continue
      const found = jsonTypes.filter(type => type in content).map(type => content[type].examples?.example)
      t.ok(found.length > 0 && found.every(example => example !== undefined), `${method} ${path}: an example on each JSON media type`)
      t.same(found.slice(1), found.slice(0, -1), `${method} ${path}: the same on each`)
      t.notOk(content['application/xml']?.examples, `${method} ${path}: none on XML`)
      const schema = { $ref: `openapi${String(content['application/json'].schema.$ref)}` }
      const valid = documented.validate(schema, found[0]?.value)
      t.ok(valid, `${method} ${path}: as documented${valid ? '' : `: ${documented.errorsText()}`}`)
      examples.set(`${method.toUpperCase()} ${path}`, found[0])
    }
  }
  return examples
}

t.test('the demo: every write body has an example, and the server takes it', async t => {
  const app = await buildDemoApp(loadConfig({ STORE: 'memory', CURSOR_SECRET: 'a-test-secret-of-enough-length' }))
  t.teardown(() => app.close())
  await app.ready()
  const examples = await examplesOf(t, app)
  const writes = ['authors', 'books', 'reviews', 'webhooks'].flatMap(name => [`POST /${name}`, `PUT /${name}/{id}`, `PATCH /${name}/{id}`])
  t.same([...examples.keys()].sort(), [...writes, 'POST /batch'].sort(), 'every documented write body, and the batch')

  const send = async (method: 'POST' | 'PUT' | 'PATCH', url: string, body: unknown, type = 'application/json') =>
    await app.inject({ method, url: `/v1${url}`, headers: { authorization: 'Bearer dev-token', 'content-type': type }, payload: JSON.stringify(body) })
  const example = (key: string) => examples.get(key)?.value as Json

  // authors: no relation, so each example as it stands.
  t.notMatch(examples.get('POST /authors')?.description, /placeholder/, 'nothing to replace')
  const author = await send('POST', '/authors', example('POST /authors'))
  t.equal(author.statusCode, 201, author.body)
  t.match(author.json().data.author, example('POST /authors'))
  const authorId = author.json().data.author.id as string
  const replaced = await send('PUT', `/authors/${authorId}`, example('PUT /authors/{id}'))
  t.equal(replaced.statusCode, 200, replaced.body)
  for (const type of jsonTypes) {
    const modified = await send('PATCH', `/authors/${authorId}`, example('PATCH /authors/{id}'), type)
    t.equal(modified.statusCode, 200, `${type}: ${modified.body}`)
    t.match(modified.json().data.author, example('PATCH /authors/{id}'))
  }

  // books: authorId is only a placeholder of the right type, which the validator takes: 422, not 400.
  t.match(examples.get('POST /books')?.description, /`authorId` must be the id of an existing author/)
  t.notOk('authorId' in example('PATCH /books/{id}'), 'a patch leaves the relation out')
  const dangling = await send('POST', '/books', example('POST /books'))
  t.equal(dangling.statusCode, 422, dangling.body)
  t.match(dangling.json().invalidParams, [{ name: 'authorId' }])
  const book = await send('POST', '/books', { ...example('POST /books'), authorId })
  t.equal(book.statusCode, 201, book.body)
  const bookId = book.json().data.book.id as string
  t.equal((await send('PUT', `/books/${bookId}`, { ...example('PUT /books/{id}'), authorId })).statusCode, 200)
  t.equal((await send('PATCH', `/books/${bookId}`, example('PATCH /books/{id}'))).statusCode, 200)

  // reviews: moderatorNote (admins only) is left out, the server's fields too.
  t.same(Object.keys(example('POST /reviews')).sort(), ['bookId', 'private', 'rating', 'text'])
  const review = await send('POST', '/reviews', { ...example('POST /reviews'), bookId })
  t.equal(review.statusCode, 201, review.body)
  const reviewId = review.json().data.review.id as string
  t.equal((await send('PUT', `/reviews/${reviewId}`, { ...example('PUT /reviews/{id}'), bookId })).statusCode, 200)
  t.equal((await send('PATCH', `/reviews/${reviewId}`, example('PATCH /reviews/{id}'))).statusCode, 200)

  // The batch refers to the records it creates by lid: it runs as it stands.
  const batch = await send('POST', '/batch', example('POST /batch'))
  t.equal(batch.statusCode, 200, batch.body)
  t.same(batch.json().data.results.map((result: Json) => result.status), [201, 201, 201, 201])
  t.same(example('POST /batch').operations.map((operation: Json) => operation.resource), ['authors', 'books', 'reviews', 'webhooks'], 'each after what it refers to')
})

// Formats, enums, bounds, patterns, nesting, and the schema's own examples and defaults.
const Gadget = Type.Object({
  id: Type.Readonly(Type.String()),
  email: Type.String({ format: 'email' }),
  homepage: Type.Optional(Type.String({ format: 'uri' })),
  serial: Type.String({ format: 'uuid' }),
  releasedOn: Type.String({ format: 'date' }),
  seenAt: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()])),
  color: Type.Union([Type.Literal('red'), Type.Literal('green')]),
  size: Type.Unsafe<string>({ type: 'string', enum: ['S', 'M', 'L'] }),
  code: Type.String({ pattern: '^[A-Z]{3}-\\d{2,4}\\.x?$' }),
  // A pattern too involved to write a value for: an optional field is left out.
  sku: Type.Optional(Type.String({ pattern: '^(ab|cd)+$' })),
  quantity: Type.Integer({ minimum: 12, maximum: 20, multipleOf: 5 }),
  ratio: Type.Number({ exclusiveMinimum: 0, exclusiveMaximum: 1 }),
  nickname: Type.String({ minLength: 30, maxLength: 40 }),
  tag: Type.String({ maxLength: 3 }),
  motto: Type.String({ examples: ['Less is more'] }),
  level: Type.Optional(Type.Integer({ default: 3, minimum: 1 })),
  active: Type.Boolean(),
  tags: Type.Array(Type.String({ minLength: 2 }), { minItems: 2 }),
  dims: Type.Object({ w: Type.Number({ minimum: 1 }), h: Type.Optional(Type.Integer({ maximum: -1 })) }),
  notes: Type.Optional(Type.Unknown())
}, { additionalProperties: false })

const gadgets = (store: Store) => [defineResource({ name: 'gadgets', singular: 'gadget', schema: Gadget, store })]

t.test('formats, enums, bounds and patterns: the examples pass, the schema\'s own values first', async t => {
  const app = await buildApp(t, { resources: gadgets })
  const examples = await examplesOf(t, app)
  const create = examples.get('POST /gadgets')?.value as Json
  t.match(create, {
    motto: 'Less is more',
    level: 3,
    color: 'red',
    size: 'S',
    quantity: 15,
    code: /^[A-Z]{3}-\d{2,4}\.x?$/,
    nickname: /^.{30}$/,
    tag: /^.{1,3}$/,
    tags: [/^.{2,}$/, /^.{2,}$/],
    dims: { w: 1, h: -1 }
  }, 'the schema\'s examples and defaults, enums, bounds and patterns')
  t.notOk('sku' in create, 'an optional field with an involved pattern is left out')

  const created = await app.inject({ method: 'POST', url: '/v1/gadgets', headers: { 'content-type': 'application/json' }, payload: create })
  t.equal(created.statusCode, 201, created.body)
  t.match(created.json().data.gadget, create)
  const id = created.json().data.gadget.id as string
  for (const [method, key] of [['PUT', 'PUT /gadgets/{id}'], ['PATCH', 'PATCH /gadgets/{id}']] as const) {
    const res = await app.inject({ method, url: `/v1/gadgets/${id}`, headers: { 'content-type': 'application/json' }, payload: examples.get(key)?.value })
    t.equal(res.statusCode, 200, `${key}: ${res.body}`)
  }
})

t.test('a required field no value is found for: no example for the bodies that need it', async t => {
  const Stamp = Type.Object({ id: Type.Readonly(Type.String()), mark: Type.String({ pattern: '^(x|y)$' }), note: Type.Optional(Type.String()) })
  const app = await buildApp(t, { resources: store => [defineResource({ name: 'stamps', singular: 'stamp', schema: Stamp, store })] })
  const document = JSON.parse((await app.inject({ url: '/v1/openapi.json' })).body)
  const exampleAt = (path: string, method: string) => document.paths[path][method].requestBody.content['application/json'].examples
  t.equal(exampleAt('/stamps', 'post'), undefined)
  t.equal(exampleAt('/stamps/{id}', 'put'), undefined)
  t.same(exampleAt('/stamps/{id}', 'patch').example.value, { note: 'Example note' }, 'a patch need not carry it')
  t.equal(exampleAt('/batch', 'post'), undefined, 'nor a batch with nothing to create')
})

t.test('exampleOf: each value passes the server\'s validator (Ajv as the plugin configures it)', async t => {
  const ajv = createAjv()
  const schemas: Record<string, TSchema | Record<string, unknown>> = {
    'a const': Type.Literal(7),
    'nullable, type list': { type: ['null', 'integer'], minimum: 2 },
    'only null': Type.Null(),
    oneOf: { oneOf: [{ type: 'string', format: 'email' }, { type: 'integer' }] },
    'allOf of objects': Type.Intersect([Type.Object({ a: Type.String() }), Type.Object({ b: Type.Integer({ exclusiveMinimum: 4 }) })]),
    'allOf of strings': { allOf: [{ type: 'string', minLength: 3 }, { type: 'string' }] },
    'object without type': { properties: { a: { type: 'boolean' } }, required: ['a'] },
    'no schema at all': {},
    'an integer below zero': { type: 'integer', exclusiveMaximum: -3 },
    'a number in a narrow range': { type: 'number', exclusiveMinimum: 0.25, exclusiveMaximum: 0.5 },
    'a multiple of a fraction': { type: 'number', minimum: 0.6, multipleOf: 0.5 },
    'an empty array': { type: 'array', maxItems: 0 },
    'unique items': { type: 'array', items: { type: 'integer' }, uniqueItems: true },
    'array of anything': { type: 'array', minItems: 1 },
    'a time': { type: 'string', format: 'time' },
    'an unknown format': { type: 'string', format: 'color', minLength: 2 },
    'a class with an escape': { type: 'string', pattern: '^[\\d]{3}[.]\\w+\\s?-*$' },
    'a pattern the text meets': { type: 'string', pattern: '^Example' },
    'a pattern without anchors': { type: 'string', pattern: 'x{2}' },
    'a pattern ending in a dollar': { type: 'string', pattern: '^a\\$' },
    'any characters': { type: 'string', pattern: '^.{3}$' },
    'only null in anyOf': { anyOf: [{ type: 'null' }] },
    'an object with no properties': { type: 'object' },
    'an object with none required': { type: 'object', properties: { a: { type: 'integer' } } }
  }
  for (const [what, schema] of Object.entries(schemas)) {
    const value = exampleOf(schema)
    t.ok(ajv.validate(schema, value), `${what}: ${JSON.stringify(value)} ${ajv.errorsText()}`)
  }
  // None found: refused by `not`, a pattern with a negated class or an unknown escape, unique
  // repeated items, bounds no value meets, a required member without one.
  const none = [
    Type.Not(Type.String()),
    { type: 'string', pattern: '^[^a]$' },
    { type: 'string', pattern: '^\\W$' },
    { type: 'array', items: { type: 'integer' }, minItems: 2, uniqueItems: true },
    { type: 'array', items: { not: {} }, minItems: 1 },
    { type: 'integer', minimum: 0.2, maximum: 0.8 },
    { type: 'object', properties: { a: { not: {} } }, required: ['a'] }
  ]
  for (const schema of none) t.equal(exampleOf(schema), undefined, JSON.stringify(schema))
})
