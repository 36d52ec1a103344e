// Application rules (docs/rules.md) seen from a client: row rules on every read path and write,
// field rules with no oracle, server-set values, hooks in the write's transaction, the OpenAPI
// marks, and the definitions refused at registration.
import t from 'tap'
import Fastify from 'fastify'
import apiConventions, { memoryStore } from '../lib/index.js'
import { as, asJson, build, callers, resources } from './helpers/rules-app.js'

const titles = (res: { json: () => any }) => (res.json().data.posts as Array<{ title: string }>).map(p => p.title).sort()

t.test('a caller sees public rows and its own, on every read path', async t => {
  const { app, topic, annPrivate, bobPrivate } = await build(t)
  const list = await app.inject({ url: '/v1/posts?total=true', headers: as('bob') })
  t.same(titles(list), ['ann public', 'bob private'])
  t.equal(list.json().meta.total, 2, 'total counts only visible rows')
  t.same(titles(await app.inject({ url: '/v1/posts', headers: as('root') })), ['ann private', 'ann public', 'bob private'], 'the rule function lets admin see all')
  const hidden = await app.inject({ url: `/v1/posts/${annPrivate.id}`, headers: as('bob') })
  const madeUp = await app.inject({ url: '/v1/posts/no-such-post', headers: as('bob') })
  t.equal(hidden.statusCode, 404)
  t.same({ ...hidden.json(), detail: '', instance: '' }, { ...madeUp.json(), detail: '', instance: '' }, 'the same problem as an id that never existed')
  t.equal(hidden.json().detail, `post ${annPrivate.id} was not found.`)
  t.equal((await app.inject({ method: 'HEAD', url: `/v1/posts/${annPrivate.id}`, headers: as('bob') })).statusCode, 404)
  t.equal((await app.inject({ method: 'OPTIONS', url: `/v1/posts/${annPrivate.id}`, headers: as('bob') })).statusCode, 404)
  t.equal((await app.inject({ url: `/v1/posts/${bobPrivate.id}`, headers: as('bob') })).statusCode, 200, 'its own private row')
  t.same(titles(await app.inject({ url: `/v1/topics/${topic.id}/posts`, headers: as('bob') })), ['ann public', 'bob private'], 'nested collection')
  const expanded = await app.inject({ url: `/v1/topics/${topic.id}?expand=posts`, headers: as('bob') })
  t.same((expanded.json().data.topic.posts as Array<{ title: string }>).map(p => p.title).sort(), ['ann public', 'bob private'], 'expand')
  const included = await app.inject({ url: '/v1/topics?include=posts', headers: as('bob') })
  t.same(included.json().links.filter((l: { rel: string }) => l.rel === 'posts').length, 2, 'include')
  const related = await app.inject({ url: "/v1/topics?filter=posts/title eq 'ann private'", headers: as('bob') })
  t.same(related.json().data.topics, [], 'a related-path filter finds no hidden row')
  const relatedAnn = await app.inject({ url: "/v1/topics?filter=posts/title eq 'ann private'", headers: as('ann') })
  t.equal(relatedAnn.json().data.topics.length, 1, 'while its owner finds it')
})

t.test('paging walks only visible rows and a token cannot reach others', async t => {
  const { app, post } = await build(t)
  for (let i = 0; i < 5; i++) await post('ann', { title: `ann hidden ${i}`, private: true })
  const seen: string[] = []
  let url: string | undefined = '/v1/posts?pageSize=1&sort=title'
  while (url !== undefined) {
    const res: Awaited<ReturnType<typeof app.inject>> = await app.inject({ url, headers: as('bob') })
    t.equal(res.statusCode, 200)
    seen.push(...titles(res))
    url = res.json().links.find((l: { rel: string }) => l.rel === 'next')?.href
  }
  t.same(seen, ['ann public', 'bob private'])
})

t.test('writes: 404 for a row the caller cannot see, 403 for one it may not change, allowed for its own', async t => {
  const { app, annPublic, annPrivate, bobPrivate } = await build(t)
  const patch = (who: keyof typeof callers, id: string, headers: Record<string, string> = {}) =>
    app.inject({ method: 'PATCH', url: `/v1/posts/${id}`, headers: { ...asJson(who), ...headers }, payload: { title: 'changed' } })
  t.equal((await patch('bob', annPrivate.id)).statusCode, 404)
  t.equal((await patch('bob', annPrivate.id, { 'if-match': '"1"' })).statusCode, 412, 'with If-Match: as for a row that does not exist')
  t.equal((await patch('bob', 'no-such', { 'if-match': '"1"' })).statusCode, 412)
  const refused = await patch('bob', annPublic.id)
  t.equal(refused.statusCode, 403)
  t.equal(refused.json().detail, 'You may not change this post.')
  t.equal((await app.inject({ method: 'PUT', url: `/v1/posts/${annPublic.id}`, headers: asJson('bob'), payload: { topicId: annPublic.topicId, title: 'x' } })).statusCode, 403)
  t.equal((await app.inject({ method: 'DELETE', url: `/v1/posts/${annPublic.id}`, headers: as('bob') })).statusCode, 403)
  t.equal((await app.inject({ method: 'DELETE', url: `/v1/posts/${annPrivate.id}`, headers: as('bob') })).statusCode, 404)
  const own = await patch('bob', bobPrivate.id)
  t.equal(own.statusCode, 200)
  t.equal(own.json().data.post.title, 'changed')
  t.equal((await patch('root', annPrivate.id)).statusCode, 200, 'admin changes any row')
  t.equal((await app.inject({ url: `/v1/posts/${annPublic.id}`, headers: as('ann') })).json().data.post.title, 'ann public', 'refused writes changed nothing')
  t.equal((await app.inject({ method: 'DELETE', url: `/v1/posts/${bobPrivate.id}`, headers: as('bob') })).statusCode, 204)
})

t.test('server-set values: from the caller and the clock, read-only to clients, kept or renewed', async t => {
  const { app, annPublic } = await build(t)
  t.equal(annPublic.ownerId, 'ann')
  t.match(annPublic.createdAt, /^\d{4}-\d\d-\d\dT/)
  t.equal(annPublic.updatedAt, annPublic.createdAt)
  for (const field of ['ownerId', 'createdAt', 'updatedAt']) {
    const res = await app.inject({ method: 'POST', url: '/v1/posts', headers: asJson('ann'), payload: { topicId: annPublic.topicId, title: 't', [field]: 'x' } })
    t.equal(res.statusCode, 400, field)
    t.same(res.json().invalidParams, [{ name: field, reason: 'is read-only and set by the server' }])
  }
  await new Promise(resolve => setTimeout(resolve, 5))
  const replaced = (await app.inject({ method: 'PUT', url: `/v1/posts/${annPublic.id}`, headers: asJson('ann'), payload: { topicId: annPublic.topicId, title: 'again' } })).json().data.post
  t.equal(replaced.ownerId, 'ann')
  t.equal(replaced.createdAt, annPublic.createdAt, 'on create only: never changes')
  t.ok(replaced.updatedAt > String(annPublic.updatedAt), 'on every write: renewed')
})

t.test('a field a caller may not read does not exist for it; one it may not write is refused', async t => {
  const { app, annPublic } = await build(t)
  t.equal((await app.inject({ method: 'PATCH', url: `/v1/posts/${annPublic.id}`, headers: asJson('root'), payload: { secret: 'for admins' } })).statusCode, 200)
  const asAnn = (await app.inject({ url: `/v1/posts/${annPublic.id}`, headers: as('ann') }))
  t.notOk('secret' in asAnn.json().data.post, 'absent from the response')
  const asRoot = (await app.inject({ url: `/v1/posts/${annPublic.id}`, headers: as('root') }))
  t.equal(asRoot.json().data.post.secret, 'for admins')
  t.not(asAnn.headers.etag, asRoot.headers.etag, 'different representations, different tags')
  // A write answers the caller the representation its RETRIEVE sends: the same tag, so it revalidates to 304.
  const patched = await app.inject({ method: 'PATCH', url: `/v1/posts/${annPublic.id}`, headers: asJson('ann'), payload: { title: 'retitled' } })
  const reread = await app.inject({ url: `/v1/posts/${annPublic.id}`, headers: as('ann') })
  t.equal(patched.headers.etag, reread.headers.etag, 'the tag of the write\'s answer is the RETRIEVE\'s')
  t.equal((await app.inject({ url: `/v1/posts/${annPublic.id}`, headers: { ...as('ann'), 'if-none-match': String(patched.headers.etag) } })).statusCode, 304)
  t.notOk((await app.inject({ url: '/v1/posts', headers: as('ann') })).json().data.posts.some((p: object) => 'secret' in p), 'absent from lists')
  for (const query of ['fields=secret', "filter=secret eq 'x'", 'sort=secret', 'secret=x']) {
    const hidden = await app.inject({ url: `/v1/posts?${query}`, headers: as('ann') })
    const madeUp = await app.inject({ url: `/v1/posts?${query.replaceAll('secret', 'nonesuch')}`, headers: as('ann') })
    t.equal(hidden.statusCode, 400, query)
    t.same(hidden.json().invalidParams, JSON.parse(JSON.stringify(madeUp.json().invalidParams).replaceAll('nonesuch', 'secret')), `${query}: the answer a made-up name gets`)
    t.equal((await app.inject({ url: `/v1/posts?${query}`, headers: as('root') })).statusCode, 200, `${query} for admin`)
  }
  const item = await app.inject({ url: `/v1/posts/${annPublic.id}?fields=secret`, headers: as('ann') })
  t.equal(item.statusCode, 400)
  for (const method of ['PATCH', 'PUT'] as const) {
    const res = await app.inject({ method, url: `/v1/posts/${annPublic.id}`, headers: asJson('ann'), payload: { topicId: annPublic.topicId, title: 'x', secret: 'mine' } })
    t.equal(res.statusCode, 400, method)
    t.same(res.json().invalidParams, [{ name: 'secret', reason: 'is not a field of this resource' }])
  }
  for (const [method, url] of [['POST', '/v1/posts'], ['PUT', `/v1/posts/${annPublic.id}`], ['PATCH', `/v1/posts/${annPublic.id}`]] as const) {
    const body = (name: string) => ({ topicId: annPublic.topicId, title: '', [name]: 'mine' })
    const hidden = await app.inject({ method, url, headers: asJson('ann'), payload: body('secret') })
    const madeUp = await app.inject({ method, url, headers: asJson('ann'), payload: body('nonesuch') })
    t.same(hidden.json(), JSON.parse(madeUp.body.replaceAll('nonesuch', 'secret')), `${method}: with other problems too, the answer a made-up name gets`)
    t.equal(hidden.json().invalidParams.length, 2)
  }
  const pinned = await app.inject({ method: 'PATCH', url: `/v1/posts/${annPublic.id}`, headers: asJson('ann'), payload: { pinned: true } })
  t.equal(pinned.statusCode, 400, 'a field the caller may read but not write')
  t.same(pinned.json().invalidParams, [{ name: 'pinned', reason: 'may not be written by this caller' }])
  t.equal((await app.inject({ method: 'PATCH', url: `/v1/posts/${annPublic.id}`, headers: asJson('root'), payload: { pinned: true } })).json().data.post.pinned, true, 'admin may')
  t.equal((await app.inject({ url: `/v1/posts/${annPublic.id}`, headers: as('ann') })).json().data.post.pinned, true, 'and the others read it')
  const replaced = await app.inject({ method: 'PUT', url: `/v1/posts/${annPublic.id}`, headers: asJson('ann'), payload: { topicId: annPublic.topicId, title: 'replaced' } })
  t.equal(replaced.statusCode, 200)
  t.equal((await app.inject({ url: `/v1/posts/${annPublic.id}`, headers: as('root') })).json().data.post.secret, 'for admins', 'a REPLACE keeps what the caller could not send')
})

t.test('hooks: business rules refuse with a problem, derived values change in the same transaction', async t => {
  const { app, topic, post, annPublic } = await build(t)
  const count = async () => (await app.inject({ url: `/v1/topics/${topic.id}`, headers: as('root') }))
  const before = await count()
  t.equal(before.json().data.topic.postCount, 3)
  const taken = await app.inject({ method: 'POST', url: '/v1/posts', headers: asJson('ann'), payload: { topicId: topic.id, title: 'forbidden' } })
  t.equal(taken.statusCode, 409)
  t.same(taken.json().invalidParams, [{ name: 'title', reason: 'is taken' }])
  const missing = await app.inject({ method: 'POST', url: '/v1/posts', headers: asJson('ann'), payload: { topicId: 'nope', title: 'x' } })
  t.equal(missing.statusCode, 422)
  t.same(missing.json().invalidParams, [{ name: 'topicId', reason: 'names no topic' }])
  const failing = await app.inject({ method: 'POST', url: '/v1/posts', headers: asJson('ann'), payload: { topicId: topic.id, title: 'explode after' } })
  t.equal(failing.statusCode, 500)
  const after = await count()
  t.equal(after.json().data.topic.postCount, 3, 'a hook failing halfway leaves the topic as it was')
  t.equal(after.headers.etag, before.headers.etag)
  t.same(titles(await app.inject({ url: '/v1/posts', headers: as('root') })).includes('explode after'), false, '…and no post')
  await post('bob', { title: 'one more' })
  const grown = await count()
  t.equal(grown.json().data.topic.postCount, 4)
  t.not(grown.headers.etag, before.headers.etag, 'the derived write moves the version')
  t.equal((await app.inject({ method: 'DELETE', url: `/v1/posts/${annPublic.id}`, headers: as('ann') })).statusCode, 204)
  t.equal((await count()).json().data.topic.postCount, 3)
  const creates = await Promise.all(Array.from({ length: 50 }, (_, i) =>
    app.inject({ method: 'POST', url: '/v1/posts', headers: asJson(i % 2 === 0 ? 'ann' : 'bob'), payload: { topicId: topic.id, title: `parallel ${i}` } })))
  t.same(new Set(creates.map(res => res.statusCode)), new Set([201]))
  t.equal((await count()).json().data.topic.postCount, 53, '50 parallel creates, counted exactly')
})

t.test('the OpenAPI document marks restricted and server-set fields', async t => {
  const { app } = await build(t)
  const properties = (await app.inject({ url: '/v1/openapi.json' })).json().components.schemas.Post.properties
  t.same(properties.secret['x-restricted'], ['read', 'write'])
  t.match(properties.secret.description, /only some callers may read and write it/)
  t.match(properties.createdAt.description, /Set by the server when the record is created/)
  t.match(properties.updatedAt.description, /Set by the server on every write/)
  t.same(properties.pinned['x-restricted'], ['write'])
  t.match(properties.pinned.description, /only some callers may write it; for the others it is read-only/)
  t.notOk('x-restricted' in properties.title)
  const paths = (await app.inject({ url: '/v1/openapi.json' })).json().paths
  for (const operation of [paths['/posts'].post, paths['/posts/{id}'].put, paths['/posts/{id}'].patch, paths['/posts/{id}'].delete]) {
    t.match(operation.description, /Business rules of the application may refuse it: 409 or 422/, operation.operationId)
    t.ok('409' in operation.responses && '422' in operation.responses, `${String(operation.operationId)}: 409 and 422`)
  }
  t.notMatch(paths['/topics'].post.description, /Business rules/, 'a resource without hooks says nothing of them')
})

t.test('definitions the rules cannot serve stop registration', async t => {
  const attempt = async (extra: Record<string, unknown>) => {
    const app = Fastify({ logger: false })
    t.teardown(() => app.close())
    const [topics, posts] = resources(memoryStore())
    try {
      await app.register(apiConventions, { resources: [topics, { ...posts, rules: undefined, serverValues: undefined, hooks: undefined, ...extra }] })
      await app.ready()
      return 'ready'
    } catch (error) {
      return (error as Error).message
    }
  }
  t.match(await attempt({ rules: { read: 'nonesuch eq 1' } }), /posts\.rules\.read: unknown field 'nonesuch' in 'nonesuch eq 1'/)
  t.match(await attempt({ rules: { read: 'title eq' } }), /posts\.rules\.read: .* in 'title eq'/)
  t.match(await attempt({ rules: { read: 42 } }), /posts\.rules\.read: must be a filter string or a function/)
  t.match(await attempt({ rules: { fields: { nonesuch: {} } } }), /posts\.rules\.fields\.nonesuch: names no field/)
  t.match(await attempt({ rules: { fields: { title: { read: () => false } } } }), /cannot be hidden/)
  t.match(await attempt({ rules: { fields: { secret: { reed: () => false } } } }), /posts\.rules\.fields\.secret\.reed is not a known key; did you mean "read"\?/)
  t.match(await attempt({ rules: { fields: { secret: { shownOnCreate: 'yes' } } } }), /posts\.rules\.fields\.secret\.shownOnCreate: must be a boolean/)
  t.match(await attempt({ rules: { raed: 'title eq 1' } }), /posts\.rules\.raed is not a known key; did you mean "read"\?/)
  t.match(await attempt({ serverValues: { title: { on: 'create', value: () => 'x' } } }), /posts\.serverValues\.title: must name a read-only field/)
  t.match(await attempt({ serverValues: { ownerId: { on: 'sometimes', value: () => 'x' } } }), /on must be 'create' or 'write'/)
  t.match(await attempt({ serverValues: { ownerId: { on: 'create', value: 'now' } } }), /value must be a function of the write, or 'now' for a date-time field/)
  t.match(await attempt({ serverValues: { ownerId: { on: 'create', value: () => 'x', when: 'always' } } }), /posts\.serverValues\.ownerId\.when is not a known key; known: on, value/)
  t.match(await attempt({ serverValues: { ownerId: { on: 'create', valeu: () => 'x' } } }), /posts\.serverValues\.ownerId\.valeu is not a known key; did you mean "value"\?/)
  t.match(await attempt({ hooks: { afterwrite: () => {} } }), /posts\.hooks\.afterwrite is not a known key; did you mean "afterWrite"\?/)
  t.match(await attempt({ hooks: { afterWrite: 'recount' } }), /posts\.hooks\.afterWrite: hooks are beforeWrite and afterWrite, each a function of the write/)
  t.equal(await attempt({ rules: { read: 'ownerId eq @principal.user', write: '' } }), 'ready', 'a placeholder fills in as null when checked')
})
