// The docsPage option (README "Options"): the reference page at {prefix}/docs is served when
// @scalar/fastify-api-reference is installed, unless turned off; its absence is optional-packages.test.ts.
import t from 'tap'
import type { Test } from 'tap'
import Fastify from 'fastify'
import { Type } from '@sinclair/typebox'
import apiConventions, { defineResource, memoryStore } from '../lib/index.js'
import type { ApiConventionsOptions } from '../lib/index.js'

const Book = Type.Object({ id: Type.Readonly(Type.String()), title: Type.String() }, { additionalProperties: false })

async function docsStatus (t: Test, docsPage: unknown): Promise<number> {
  const app = Fastify()
  t.teardown(() => app.close())
  const resources = [defineResource({ name: 'books', singular: 'book', schema: Book, store: memoryStore() })]
  await app.register(apiConventions, { prefix: '/v1', resources, cursorSecret: 'a-secret-of-16-chars', docsPage } as ApiConventionsOptions)
  return (await app.inject({ url: '/v1/docs/' })).statusCode
}

t.test('the docs page is served by default and with docsPage: true when Scalar is installed', async t => {
  t.equal(await docsStatus(t, undefined), 200)
  t.equal(await docsStatus(t, true), 200)
})

t.test('docsPage: false serves no docs page', async t => {
  t.equal(await docsStatus(t, false), 404)
})

t.test('a docsPage that is not a boolean stops registration naming it', async t => {
  await t.rejects(docsStatus(t, 'yes'), { code: 'API_ERR_OPTIONS_INVALID', message: /docsPage must be a boolean, received "yes"/ })
})

t.test('the docs page answers 200 at {prefix}/docs also when the host ignores trailing slashes', async t => {
  const app = Fastify({ routerOptions: { ignoreTrailingSlash: true } })
  t.teardown(() => app.close())
  const resources = [defineResource({ name: 'books', singular: 'book', schema: Book, store: memoryStore() })]
  await app.register(apiConventions, { prefix: '/api', resources, cursorSecret: 'a-secret-of-16-chars' })
  const [bare, slashed] = await Promise.all([app.inject({ url: '/api/docs' }), app.inject({ url: '/api/docs/' })])
  t.same([bare.statusCode, slashed.statusCode], [200, 200])
  t.match(bare.body, /<script src="\/api\/docs\/js\/scalar.js">/)
  t.equal((await app.inject({ url: '/api/docs/js/scalar.js' })).statusCode, 200)
})
