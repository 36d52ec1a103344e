// Prefer (RFC 7240) on CREATE, REPLACE and MODIFY (docs/demo-contract.md "Safe retries and atomic
// writes"): return=minimal answers without a body and with the new ETag, return=representation as
// usual, each echoed in Preference-Applied; other preferences are ignored.
import t from 'tap'
import { buildApp, create, json } from './helpers/app.js'
import { returnPreference } from '../lib/http/prefer.js'
import { inlined } from './helpers/openapi.js'

t.test('return=minimal: 201 with Location and ETag, or 204 with ETag, and no body', async t => {
  const app = await buildApp(t)
  const created = await app.inject({ method: 'POST', url: '/v1/authors', headers: { ...json, prefer: 'return=minimal' }, payload: { name: 'Ann' } })
  t.equal(created.statusCode, 201)
  t.equal(created.body, '')
  t.match(created.headers.location, /^\/v1\/authors\/.+/)
  t.equal(created.headers.etag, '"1"')
  t.equal(created.headers['preference-applied'], 'return=minimal')
  const url = created.headers.location as string
  t.equal((await app.inject({ url })).json().data.author.name, 'Ann', 'the record was written')
  for (const [method, payload, etag] of [['PUT', { name: 'Bo' }, '"2"'], ['PATCH', { country: 'NZ' }, '"3"']] as const) {
    const res = await app.inject({ method, url, headers: { ...json, prefer: 'return=minimal' }, payload })
    t.equal(res.statusCode, 204, method)
    t.equal(res.body, '')
    t.equal(res.headers.etag, etag)
    t.equal(res.headers['preference-applied'], 'return=minimal')
  }
  t.same((await app.inject({ url })).json().data.author, { id: url.split('/').at(-1), name: 'Bo', born: null, country: 'NZ' })
})

t.test('return=representation, other preferences and none: the body, as usual', async t => {
  const app = await buildApp(t)
  const author = await create(app, 'authors', { name: 'Ann' })
  const asked = await app.inject({ method: 'PATCH', url: `/v1/authors/${author.id}`, headers: { ...json, prefer: 'respond-async, return=representation' }, payload: { name: 'Bo' } })
  t.equal(asked.statusCode, 200)
  t.equal(asked.json().data.author.name, 'Bo')
  t.equal(asked.headers['preference-applied'], 'return=representation')
  const other = await app.inject({ method: 'PATCH', url: `/v1/authors/${author.id}`, headers: { ...json, prefer: 'handling=lenient, return=everything' }, payload: { name: 'Cy' } })
  t.equal(other.statusCode, 200)
  t.equal(other.json().data.author.name, 'Cy')
  t.notOk('preference-applied' in other.headers, 'nothing applied, nothing echoed')
})

t.test('the return preference as RFC 7240 writes it', async t => {
  t.equal(returnPreference(undefined), undefined)
  t.equal(returnPreference('return=minimal'), 'minimal')
  t.equal(returnPreference('RETURN = "Minimal"; x=1'), 'minimal', 'names and values in any case, quoted, with parameters')
  t.equal(returnPreference('wait=10, foo="a,b;return=minimal", return=representation'), 'representation', 'a quoted comma does not split')
  t.equal(returnPreference(['respond-async', 'return=minimal', 'return=representation']), 'minimal', 'several headers: the first known return')
  t.equal(returnPreference('return'), undefined)
})

t.test('the OpenAPI document describes Prefer and the answers without a body', async t => {
  const app = await buildApp(t)
  const paths = inlined((await app.inject({ url: '/v1/openapi.json' })).json()).paths
  const item = paths['/authors/{id}']
  for (const operation of [paths['/authors'].post, item.put, item.patch]) {
    t.ok(operation.parameters.some((p: { in: string, name: string }) => p.in === 'header' && p.name === 'Prefer'))
  }
  t.match(item.put.responses['204'].description, /return=minimal/)
  t.match(item.patch.responses['204'].description, /return=minimal/)
  t.ok('Preference-Applied' in paths['/authors'].post.responses['201'].headers)
})
