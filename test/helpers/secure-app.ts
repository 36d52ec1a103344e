// Apps with authentication on (spec "Authentication"), built like test/helpers/app.ts (plugin +
// demo resources on a memory store), plus seeding through the API with write credentials.
import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.js'
import type { AppOverrides } from './app.js'
import { auth, testAuth } from './auth.js'

interface TestLike { teardown (fn: () => unknown): void }

/** buildApp with `testAuth()` unless the overrides name another `auth`. */
export function buildSecureApp (t: TestLike, overrides: AppOverrides = {}): Promise<FastifyInstance> {
  return buildApp(t, { auth: testAuth(), ...overrides })
}

/** POSTs one resource with write credentials; returns it as served. */
export async function createAs (app: FastifyInstance, resources: string, body: object, headers: Record<string, string> = auth.writeJson): Promise<Record<string, unknown> & { id: string }> {
  const res = await app.inject({ method: 'POST', url: `/v1/${resources}`, headers, payload: body })
  if (res.statusCode !== 201) throw new Error(`creating ${resources} failed: ${res.statusCode} ${res.body}`)
  return Object.values(res.json().data)[0] as Record<string, unknown> & { id: string }
}

/** One author and one of their books. */
export async function seedOne (app: FastifyInstance) {
  const author = await createAs(app, 'authors', { name: 'Janet Frame', born: '1924-08-28', country: 'NZ' })
  const book = await createAs(app, 'books', { title: 'Owls Do Cry', authorId: author.id, year: 1957 })
  return { author, book }
}
