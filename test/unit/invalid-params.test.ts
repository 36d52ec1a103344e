// toInvalidParams (lib/validation.ts): Ajv's errors as one entry per field, and what a nullable
// field's anyOf adds to them left out only where it would mislead.
import t from 'tap'
import { createAjv, toInvalidParams } from '../../lib/validation.js'
import type { ErrorObject } from 'ajv'

const ajv = createAjv()
const validate = ajv.compile({
  type: 'object',
  properties: {
    tags: { anyOf: [{ type: 'array', maxItems: 2, items: { type: 'string' } }, { type: 'null' }] },
    meta: { anyOf: [{ type: 'object', properties: { x: { type: 'integer' } }, required: ['x'], additionalProperties: false }, { type: 'null' }] },
    year: { anyOf: [{ type: 'integer' }, { type: 'null' }] }
  },
  additionalProperties: false
})
const paramsOf = (body: unknown) => validate(body) ? 'valid' : toInvalidParams(validate.errors as ErrorObject[])

t.test('a wrong member inside a nullable object is named alone, without "must be null" for the object', async t => {
  t.same(paramsOf({ meta: { x: 'a' } }), [{ name: 'meta.x', reason: 'must be integer' }])
  t.same(paramsOf({ meta: {} }), [{ name: 'meta.x', reason: 'is required' }])
  t.same(paramsOf({ meta: { x: 1, y: 2 } }), [{ name: 'meta.y', reason: 'is not a field of this resource' }])
})

t.test('errors of the branch the client meant all stay, the object\'s own included', async t => {
  t.same(paramsOf({ tags: ['a', 'b', 3] }), [
    { name: 'tags', reason: 'must NOT have more than 2 items' },
    { name: 'tags.2', reason: 'must be string' }
  ])
})

t.test('a value of the wrong type altogether names every branch', async t => {
  t.same(paramsOf({ year: 'soon', meta: 'x' }), [
    { name: 'meta', reason: 'must be object or must be null' },
    { name: 'year', reason: 'must be integer or must be null' }
  ])
})

t.test('a member whose name holds a dot hides nothing of its object', async t => {
  t.same(paramsOf({ meta: 5, 'meta.x': 1 }), [
    { name: 'meta.x', reason: 'is not a field of this resource' },
    { name: 'meta', reason: 'must be object or must be null' }
  ])
})
