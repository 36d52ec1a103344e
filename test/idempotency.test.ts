// Idempotency-Key on POST and PATCH (docs/demo-contract.md "Safe retries and atomic writes",
// draft-ietf-httpapi-idempotency-key-header), seen from a client: replays with
// Idempotent-Replayed, 422 for another body, 409 while the first runs, keys per caller and path,
// malformed keys 400, 5xx not kept, a lifetime, expired keys purged in the background, and the
// option that turns it off.
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { memoryStore, defineAuth, defineResource, secretTable } from '../lib/index.js'
import type { Store } from '../lib/index.js'
import { buildApp, json } from './helpers/app.js'
import { readIdempotencyKey } from '../lib/idempotency.js'
import { inlined } from './helpers/openapi.js'

const keyed = (key: string, extra: Record<string, string> = {}) => ({ ...json, 'idempotency-key': key, ...extra })
const countAuthors = async (app: Awaited<ReturnType<typeof buildApp>>) => (await app.inject({ url: '/v1/authors?total=true' })).json().meta.total as number

t.test('a retry with the same key and body gets the first answer again, and nothing is written twice', async t => {
  const app = await buildApp(t)
  const first = await app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"k-1"'), payload: { name: 'Ann' } })
  t.equal(first.statusCode, 201)
  t.notOk('idempotent-replayed' in first.headers)
  const again = await app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"k-1"'), payload: { name: 'Ann' } })
  t.equal(again.statusCode, 201)
  t.equal(again.headers['idempotent-replayed'], 'true')
  t.same({ body: again.body, location: again.headers.location, etag: again.headers.etag }, { body: first.body, location: first.headers.location, etag: first.headers.etag })
  t.equal(await countAuthors(app), 1)
  const bare = await app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('k-1'), payload: { name: 'Ann' } })
  t.equal(bare.headers['idempotent-replayed'], 'true', 'the bare form is the same key')
  const reordered = await app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"k-1"', { 'content-type': 'Application/JSON; charset=utf-8' }), payload: '{ "name" : "Ann" }' })
  t.equal(reordered.headers['idempotent-replayed'], 'true', 'the same media type and value, written otherwise, is the same request')
  const members = await app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"k-order"'), payload: '{"name":"Cy","country":"NZ"}' })
  const swapped = await app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"k-order"'), payload: '{"country":"NZ","name":"Cy"}' })
  t.same([members.statusCode, swapped.statusCode, swapped.headers['idempotent-replayed']], [201, 201, 'true'], 'members in another order')
  const other = await app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"k-1"'), payload: { name: 'Bo' } })
  t.equal(other.statusCode, 422, 'the same key with another body')
  t.match(other.json().detail, /another request body/)
  t.equal(await countAuthors(app), 2)
  const fresh = await app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"k-2"'), payload: { name: 'Ann' } })
  t.equal(fresh.statusCode, 201)
  t.not(fresh.headers.location, first.headers.location, 'a new key is a new request')
})

t.test('arrays keep their order in the comparison of bodies', async t => {
  const Note = Type.Object({ id: Type.Readonly(Type.String()), tags: Type.Array(Type.String()) }, { additionalProperties: false })
  const app = await buildApp(t, { resources: store => [defineResource({ name: 'notes', singular: 'note', schema: Note, store })] })
  const send = (tags: string[]) => app.inject({ method: 'POST', url: '/v1/notes', headers: keyed('"tags"'), payload: { tags } })
  t.equal((await send(['b', 'a'])).statusCode, 201)
  t.equal((await send(['b', 'a'])).headers['idempotent-replayed'], 'true')
  t.equal((await send(['a', 'b'])).statusCode, 422, 'another order is another body')
})

t.test('PATCH: the retry replays, the patch is applied once', async t => {
  const app = await buildApp(t)
  const author = (await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'Ann' } })).json().data.author
  const patch = () => app.inject({ method: 'PATCH', url: `/v1/authors/${author.id as string}`, headers: keyed('"p-1"'), payload: { country: 'NZ' } })
  const first = await patch()
  const again = await patch()
  t.same([first.statusCode, again.statusCode, first.headers.etag, again.headers.etag, again.headers['idempotent-replayed']], [200, 200, '"2"', '"2"', 'true'])
  t.equal((await app.inject({ url: `/v1/authors/${author.id as string}` })).headers.etag, '"2"', 'one write')
  const post = await app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"p-1"'), payload: { country: 'NZ' } })
  t.equal(post.statusCode, 400, 'the same key on another method and path is another key: this POST runs (and its body is invalid)')
})

t.test('with Prefer: return=minimal the kept answer has no body either', async t => {
  const app = await buildApp(t)
  const send = () => app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"m-1"', { prefer: 'return=minimal' }), payload: { name: 'Ann' } })
  const first = await send()
  const again = await send()
  t.same([first.statusCode, first.body, again.statusCode, again.body], [201, '', 201, ''])
  t.same([again.headers.location, again.headers.etag, again.headers['preference-applied'], again.headers['idempotent-replayed']], [first.headers.location, '"1"', 'return=minimal', 'true'])
})

t.test('keys belong to their caller', async t => {
  const lookUp = secretTable([['ann-token', { id: 'ann' }], ['bob-token', { id: 'bob' }]])
  const app = await buildApp(t, { auth: defineAuth({ bearer: token => lookUp(token) }) })
  const as = (token: string) => keyed('"shared"', { authorization: `Bearer ${token}` })
  const ann = await app.inject({ method: 'POST', url: '/v1/authors', headers: as('ann-token'), payload: { name: 'Ann' } })
  const bob = await app.inject({ method: 'POST', url: '/v1/authors', headers: as('bob-token'), payload: { name: 'Ann' } })
  t.same([ann.statusCode, bob.statusCode], [201, 201])
  t.notOk('idempotent-replayed' in bob.headers, "another caller's identical key is another key")
  t.not(bob.headers.location, ann.headers.location)
})

t.test('a malformed, empty, repeated or too long key is a 400 naming the header', async t => {
  const app = await buildApp(t)
  for (const key of ['""', '"a b', 'a b', '"tab\there"', '"é"', `"${'k'.repeat(256)}"`]) {
    const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: keyed(key), payload: { name: 'Ann' } })
    t.equal(res.statusCode, 400, key)
    t.equal(res.json().invalidParams[0].name, 'Idempotency-Key')
  }
  t.equal((await app.inject({ method: 'POST', url: '/v1/authors', headers: keyed(`"${'k'.repeat(255)}"`), payload: { name: 'Ann' } })).statusCode, 201, '255 characters')
  t.equal(await countAuthors(app), 1)
})

t.test('the key as RFC 8941 writes a string', async t => {
  t.equal(readIdempotencyKey(undefined), undefined)
  t.equal(readIdempotencyKey('"a\\"b\\\\c"'), 'a"b\\c', 'escapes')
  t.equal(readIdempotencyKey('  "spaced out"  '), 'spaced out')
  const refusal = (header: string | string[]) => {
    try {
      return readIdempotencyKey(header)
    } catch (error) {
      return (error as { invalidParams: unknown }).invalidParams
    }
  }
  t.same(refusal(['"a"', '"b"']), [{ name: 'Idempotency-Key', reason: 'must be sent once' }])
  t.same(refusal('"a\\b"'), [{ name: 'Idempotency-Key', reason: 'must be a structured-field string ("…") of printable ASCII characters' }], 'only \\" and \\\\ escape')
})

/** A memory store whose next create waits for `release`, or fails once with a 503. */
function slowStore () {
  const inner = memoryStore()
  let gate: Promise<void> | null = null
  let claimGate: Promise<void> | null = null
  let failNext = false
  const store: Store = Object.assign(Object.create(inner) as Store, {
    async transaction<T> (work: (tx: Store) => Promise<T>): Promise<T> {
      return await inner.transaction(async tx => await work(Object.assign(Object.create(tx) as Store, {
        async claimKey (key: string) {
          if (claimGate !== null) await claimGate
          return await tx.claimKey(key)
        },
        async create (...args: Parameters<Store['create']>) {
          if (gate !== null) await gate
          if (failNext) {
            failNext = false
            throw Object.assign(new Error('store down'), { statusCode: 503, code: 'API_ERR_STORE_UNAVAILABLE' })
          }
          return await tx.create(...args)
        }
      })))
    }
  })
  return {
    store,
    hold () { let release = () => {}; gate = new Promise(resolve => { release = resolve }); return () => { gate = null; release() } },
    holdClaims () { let release = () => {}; claimGate = new Promise(resolve => { release = resolve }); return () => { claimGate = null; release() } },
    failOnce () { failNext = true }
  }
}

t.test('while the first request runs, the same key is a 409; a 5xx is not kept', async t => {
  const slow = slowStore()
  const app = await buildApp(t, { store: slow.store })
  const release = slow.hold()
  const first = app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"busy"'), payload: { name: 'Ann' } })
  await new Promise(resolve => setTimeout(resolve, 20))
  const second = await app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"busy"'), payload: { name: 'Ann' } })
  t.equal(second.statusCode, 409)
  t.match(second.json().detail, /still being processed/)
  release()
  t.equal((await first).statusCode, 201)
  t.equal((await app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"busy"'), payload: { name: 'Ann' } })).headers['idempotent-replayed'], 'true')
  slow.failOnce()
  const failed = await app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"down"'), payload: { name: 'Bo' } })
  t.equal(failed.statusCode, 503)
  const retried = await app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"down"'), payload: { name: 'Bo' } })
  t.equal(retried.statusCode, 201)
  t.notOk('idempotent-replayed' in retried.headers, 'the retry ran again')
  t.equal(await countAuthors(app), 2)
})

t.test('once the first request has its answer, retries arriving together all replay it', async t => {
  const slow = slowStore()
  const app = await buildApp(t, { store: slow.store })
  const first = await app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"together"'), payload: { name: 'Ann' } })
  // Each retry is still looking the key up when the next arrives.
  const release = slow.holdClaims()
  const arriving = Array.from({ length: 6 }, () => app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"together"'), payload: { name: 'Ann' } }))
  await new Promise(resolve => setTimeout(resolve, 20))
  release()
  const retries = await Promise.all(arriving)
  t.same(retries.map(res => [res.statusCode, res.headers['idempotent-replayed'], res.body]), Array(6).fill([201, 'true', first.body]))
  t.equal(await countAuthors(app), 1)
})

t.test('answers are kept for the configured lifetime', async t => {
  // The memory store tells expiry by its clock: the real one here.
  const app = await buildApp(t, { store: memoryStore(), idempotency: { ttlSeconds: 1 } })
  const send = () => app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"short"'), payload: { name: 'Ann' } })
  await send()
  t.equal((await send()).headers['idempotent-replayed'], 'true')
  await new Promise(resolve => setTimeout(resolve, 1100))
  const late = await send()
  t.equal(late.statusCode, 201)
  t.notOk('idempotent-replayed' in late.headers, 'expired: a new request')
  t.equal(await countAuthors(app), 2)
})

t.test('expired keys are purged after a keyed request, at most once a minute per store, never awaited by it', async t => {
  const purges: Date[] = []
  let failPurge = false
  const base = memoryStore()
  // A purge that never ends: a request that waited for it would never be answered.
  const store: Store = { ...base, purgeKeys: async (before: Date) => { purges.push(before); if (failPurge) throw new Error('purge failed'); return await new Promise<number>(() => {}) } }
  const logged: string[] = []
  const app = await buildApp(t, { store, server: { logger: { level: 'warn', stream: { write: (line: string) => { logged.push(line) } } } } })
  t.equal(purges.length, 0, 'nothing is purged before a keyed request')
  const first = await app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"purge-1"'), payload: { name: 'Ann' } })
  t.equal(first.statusCode, 201, 'answered while the purge it started still runs')
  t.equal(purges.length, 1, 'the first keyed request starts a purge of the keys expired by now')
  t.ok(Math.abs(purges[0].getTime() - Date.now()) < 5000)
  await app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"purge-2"'), payload: { name: 'Bo' } })
  await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'Cy' } })
  t.equal(purges.length, 1, 'not again within the minute, nor after a request without a key')

  // Another store: its own minute; a failing purge is logged and changes no answer.
  failPurge = true
  const other: Store = { ...memoryStore(), purgeKeys: store.purgeKeys }
  const second = await buildApp(t, { store: other, server: { logger: { level: 'warn', stream: { write: (line: string) => { logged.push(line) } } } } })
  t.equal((await second.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"purge-3"'), payload: { name: 'Di' } })).statusCode, 201)
  await new Promise(resolve => setImmediate(resolve))
  t.equal(purges.length, 2)
  t.match(logged.join(''), /purging expired Idempotency-Keys failed/)
})

t.test('idempotency: false ignores the header', async t => {
  const app = await buildApp(t, { idempotency: false })
  for (let i = 0; i < 2; i++) t.equal((await app.inject({ method: 'POST', url: '/v1/authors', headers: keyed('"k"'), payload: { name: 'Ann' } })).statusCode, 201)
  t.equal(await countAuthors(app), 2)
  const post = inlined((await app.inject({ url: '/v1/openapi.json' })).json()).paths['/authors'].post
  t.notOk(post.parameters.some((p: { name: string }) => p.name === 'Idempotency-Key'), 'and the document does not offer it')
})

t.test('the options are checked', async t => {
  await t.rejects(buildApp(t, { idempotency: { ttlSeconds: 0 } }), { message: /idempotency\.ttlSeconds must be a positive integer/ })
  await t.rejects(buildApp(t, { idempotency: { ttl: 5 } as never }), { message: /idempotency\.ttl is not a known key/ })
  await t.rejects(buildApp(t, { idempotency: 'yes' as never }), { message: /idempotency must be false or an object/ })
})

t.test('the OpenAPI document offers the header on POST and PATCH, with its answers', async t => {
  const app = await buildApp(t)
  const paths = inlined((await app.inject({ url: '/v1/openapi.json' })).json()).paths
  for (const operation of [paths['/authors'].post, paths['/authors/{id}'].patch]) {
    t.ok(operation.parameters.some((p: { in: string, name: string }) => p.in === 'header' && p.name === 'Idempotency-Key'), operation.operationId)
    t.match(operation.responses['409'].description, /Idempotency-Key is still being processed/)
    t.match(operation.responses['422'].description, /Idempotency-Key was used with another body/)
  }
  t.ok('Idempotent-Replayed' in paths['/authors'].post.responses['201'].headers)
  t.notOk(paths['/authors/{id}'].put.parameters.some((p: { name: string }) => p.name === 'Idempotency-Key'), 'PUT is idempotent already')
})
