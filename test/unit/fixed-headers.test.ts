// The fixed security headers (security/headers.ts) go into Fastify's own header store, copied in
// a way that keeps it fast; where a reply has no such store they go through reply.headers().
import t from 'tap'
import Fastify from 'fastify'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { createHeaderHooks, securityHeaders } from '../../lib/security/headers.js'

const { setFixedHeaders } = createHeaderHooks({ cacheControl: 'no-store', headerProfile: 'api', featurePolicyHeader: 'feature-policy' }, undefined)
const fixed = { ...securityHeaders(), vary: 'Origin, Accept' }

// First, before any real reply was seen: nothing found to write into.
t.test('a reply without Fastify\'s header store gets the fixed headers through reply.headers()', t => {
  const set: Record<string, unknown> = {}
  const reply = { headers (headers: Record<string, unknown>) { Object.assign(set, headers); return reply } }
  setFixedHeaders({} as FastifyRequest, reply as unknown as FastifyReply)
  t.same(set, fixed)
  t.end()
})

t.test('a Fastify reply gets them in its own store, beside what was set before', async t => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  app.get('/', function handler (request, reply) {
    reply.header('x-before', '1')
    setFixedHeaders(request, reply)
    reply.header('etag', '"1"')
    return 'ok'
  })
  const res = await app.inject({ url: '/' })
  t.match(res.headers, { ...fixed, 'x-before': '1', etag: '"1"' })
})

// The fast path depends on where Fastify keeps a reply's headers; a Fastify that moved them would
// silently fall back to the slow path, so the assumption is checked here.
t.test('Fastify keeps a reply\'s headers under Symbol(fastify.reply.headers), as the fast path assumes', async t => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  app.get('/', function handler (_request, reply) {
    const key = Object.getOwnPropertySymbols(reply).find(symbol => symbol.description === 'fastify.reply.headers')
    t.ok(key, 'the symbol is on the reply')
    reply.header('x-through-api', '1')
    t.equal((reply as unknown as Record<symbol, Record<string, string>>)[key as symbol]['x-through-api'], '1', 'and holds what reply.header() sets')
    return 'ok'
  })
  t.equal((await app.inject({ url: '/' })).statusCode, 200)
})
