// An app with application rules for tests (docs/rules.md): topics, and posts that belong to a
// user, with a row rule, a write rule, an admin-only field, server-set values and hooks that keep
// topics.postCount in step. Three callers: ann and bob (users) and root (admin).
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import apiConventions, { defineAuth, defineResource, errors, memoryStore, secretTable } from '../../lib/index.js'
import type { Store } from '../../lib/index.js'

export interface Caller { readonly user: string, readonly admin: boolean }

const Topic = Type.Object({
  id: Type.Readonly(Type.String()),
  name: Type.String(),
  postCount: Type.Readonly(Type.Integer())
}, { additionalProperties: false })

const Post = Type.Object({
  id: Type.Readonly(Type.String()),
  topicId: Type.String(),
  title: Type.String({ minLength: 1 }),
  private: Type.Optional(Type.Boolean({ default: false })),
  secret: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  pinned: Type.Optional(Type.Boolean()),
  ownerId: Type.Readonly(Type.String()),
  createdAt: Type.Readonly(Type.String({ format: 'date-time' })),
  updatedAt: Type.Readonly(Type.String({ format: 'date-time' }))
}, { additionalProperties: false, required: ['id', 'topicId', 'title', 'ownerId'] })

export const callers = { ann: 'ann-token', bob: 'bob-token', root: 'root-token' } as const
export const as = (who: keyof typeof callers) => ({ authorization: `Bearer ${callers[who]}` })
export const asJson = (who: keyof typeof callers) => ({ ...as(who), 'content-type': 'application/json' })

export function resources (store: Store) {
  return [
    defineResource({
      name: 'topics',
      singular: 'topic',
      schema: Topic,
      store,
      relations: { posts: { kind: 'many', resource: 'posts', field: 'topicId' } },
      serverValues: { postCount: { on: 'create', value: () => 0 } }
    }),
    defineResource({
      name: 'posts',
      singular: 'post',
      schema: Post,
      store,
      relations: { topic: { kind: 'one', resource: 'topics', field: 'topicId' } },
      rules: {
        read: (caller: Caller | null) => caller?.admin === true ? null : 'private eq false or ownerId eq @principal.user',
        write: (caller: Caller | null) => caller?.admin === true ? null : 'ownerId eq @principal.user',
        fields: {
          secret: { read: caller => caller?.admin === true, write: caller => caller?.admin === true },
          pinned: { write: caller => caller?.admin === true }
        }
      },
      serverValues: {
        ownerId: { on: 'create', value: ({ principal }) => principal?.user ?? 'nobody' },
        createdAt: { on: 'create', value: 'now' },
        updatedAt: { on: 'write', value: 'now' }
      },
      hooks: {
        async beforeWrite ({ record, tx }) {
          if (record === null) return
          const topic = await tx.get('topics', record.topicId, { lock: true })
          if (topic === null) throw errors.withInvalidParams(new errors.UnprocessableError('No such topic.'), [{ name: 'topicId', reason: 'names no topic' }])
          if (record.title === 'forbidden') throw errors.withInvalidParams(new errors.ConflictError('That title is taken.'), [{ name: 'title', reason: 'is taken' }])
        },
        async afterWrite ({ record, previous, tx }) {
          for (const topicId of new Set([record?.topicId, previous?.topicId])) {
            if (topicId === undefined) continue
            await tx.get('topics', topicId, { lock: true })
            const posts = await tx.list('posts', { filter: `topicId eq '${topicId}'` })
            await tx.update('topics', topicId, { postCount: posts.length })
            if (record?.title === 'explode after') throw new Error('the hook failed halfway')
          }
        }
      }
    })
  ]
}

/** The app over `store` (default: a fresh memory store) with a topic and three posts: ann's public and private ones, bob's private one. */
export async function build (t: { teardown: (fn: () => unknown) => void }, store: Store = memoryStore(), prepare?: (app: FastifyInstance) => void) {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  prepare?.(app)
  const lookUp = secretTable<Caller>([
    [callers.ann, { user: 'ann', admin: false }],
    [callers.bob, { user: 'bob', admin: false }],
    [callers.root, { user: 'root', admin: true }]
  ])
  await app.register(apiConventions, {
    prefix: '/v1',
    cursorSecret: 'a-test-secret-of-enough-length',
    auth: defineAuth<Caller>({ bearer: token => lookUp(token) }),
    resources: resources(store)
  })
  await app.ready()
  const topic = (await app.inject({ method: 'POST', url: '/v1/topics', headers: asJson('root'), payload: { name: 'General' } })).json().data.topic
  const post = async (who: keyof typeof callers, body: Record<string, unknown>) => {
    const res = await app.inject({ method: 'POST', url: '/v1/posts', headers: asJson(who), payload: { topicId: topic.id, ...body } })
    if (res.statusCode !== 201) throw new Error(`creating a post failed: ${res.statusCode} ${res.body}`)
    return res.json().data.post as Record<string, unknown> & { id: string }
  }
  const annPublic = await post('ann', { title: 'ann public' })
  const annPrivate = await post('ann', { title: 'ann private', private: true })
  const bobPrivate = await post('bob', { title: 'bob private', private: true })
  return { app: app as FastifyInstance, topic, post, annPublic, annPrivate, bobPrivate }
}
