// The rule × operation × caller matrix, generated from the route table: every route serving posts
// (which have a row rule, a write rule and an owner) is tried by a caller on a row it cannot see,
// on a visible row of another, on its own, and by an admin, and must answer as the rules say. A
// route whose operation the matrix does not know fails it, so a new route cannot escape the rules.
import t from 'tap'
import type { RouteOptions } from 'fastify'
import type { RouteSpec } from '../lib/route-spec.js'
import { as, asJson, build } from './helpers/rules-app.js'

interface Route { readonly method: string, readonly url: string, readonly spec: RouteSpec }

async function routes (): Promise<Route[]> {
  const found: Route[] = []
  await build(t, undefined, app => app.addHook('onRoute', (route: RouteOptions) => {
    const spec = route.config?.route
    if (spec?.resource?.name === 'posts') for (const method of [route.method].flat()) found.push({ method, url: route.url, spec })
  }))
  return found
}

const bodies: Partial<Record<string, (topicId: string) => object>> = {
  create: topicId => ({ topicId, title: 'new' }),
  replace: topicId => ({ topicId, title: 'replaced' }),
  modify: () => ({ title: 'modified' })
}

t.test('every route of a ruled resource, every caller', async t => {
  const all = await routes()
  t.ok(all.length >= 10, `${all.length} routes serve posts`)
  for (const { method, url, spec } of all) {
    t.test(`${method} ${url}`, async t => {
      const { app, topic, annPublic, annPrivate, bobPrivate } = await build(t)
      const body = bodies[spec.operation]?.(topic.id)
      const send = (who: 'ann' | 'bob' | 'root', id: string) => app.inject({
        method: method as 'GET',
        url: url.replace(':id', id),
        headers: body === undefined ? as(who) : asJson(who),
        ...(body === undefined ? {} : { payload: body })
      })
      const isWrite = ['replace', 'modify', 'delete'].includes(spec.operation)
      // A path ending in the id names a post; a nested collection's id names its topic.
      if (url.endsWith('/:id')) {
        const ok = spec.operation === 'delete' ? 204 : 200
        t.equal((await send('bob', annPrivate.id)).statusCode, 404, 'a row the caller cannot see')
        t.equal((await send('bob', annPublic.id)).statusCode, isWrite ? 403 : 200, 'a visible row of another')
        t.equal((await send('ann', annPublic.id)).statusCode, ok, 'its own row')
        t.equal((await send('root', bobPrivate.id)).statusCode, ok, 'admin on any row')
        return
      }
      // Collections: the nested one names the topic; the others ignore the id.
      switch (spec.operation) {
        case 'list': {
          if (method === 'HEAD') {
            t.equal((await send('bob', topic.id)).statusCode, 200)
            return
          }
          const ids = async (who: 'bob' | 'root') => (await send(who, topic.id)).json().data.posts.map((p: { id: string }) => p.id).sort()
          t.same(await ids('bob'), [annPublic.id, bobPrivate.id].sort(), 'only what the caller may see')
          t.same(await ids('root'), [annPublic.id, annPrivate.id, bobPrivate.id].sort(), 'admin sees all')
          return
        }
        case 'create': {
          const res = await send('bob', topic.id)
          t.equal(res.statusCode, 201)
          t.equal(res.json().data.post.ownerId, 'bob')
          return
        }
        case 'capabilities':
          t.equal((await send('bob', topic.id)).statusCode, 200)
          return
        default:
          t.fail(`the matrix has no expectation for ${spec.operation} on a collection`)
      }
    })
  }
})
