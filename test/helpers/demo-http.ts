// The demo from outside, over HTTP, on each store it runs on (memory, PGlite in a fresh DATA_DIR,
// PostgreSQL when DATABASE_URL is set, in a schema of its own dropped afterwards): what the demo
// contract's tests share. A caller is named by its demo token's user.
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { join } from 'node:path'
import pg from 'pg'
import { buildDemoApp } from '../../demo/app.js'
import { loadConfig } from '../../demo/config.js'

const demoEnv = { RATE_LIMIT_MAX: '1000000', CURSOR_SECRET: 'a-test-secret-of-enough-length' }
const tokenOf: Record<string, string> = { dev: 'dev-token', reader: 'read-token', alice: 'alice-token', bob: 'bob-token', admin: 'admin-token' }

export interface Answer { readonly status: number, readonly headers: Headers, readonly text: string, readonly body: any }
/** A body (sent as JSON, or as it is when text), an Idempotency-Key, other headers. */
export interface Call { readonly body?: unknown, readonly key?: string, readonly headers?: Record<string, string> }
export type Api = (caller: string, method: string, path: string, call?: Call) => Promise<Answer>

/** `tokens`: caller → bearer token, the demo's default tokens unless given. */
export function client (base: string, tokens: Readonly<Record<string, string>> = tokenOf): Api {
  return async (caller, method, path, { body, key, headers = {} } = {}) => {
    const type: Record<string, string> = body === undefined ? {} : { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' }
    const keyed: Record<string, string> = key === undefined ? {} : { 'idempotency-key': key }
    const res = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${tokens[caller]}`, ...type, ...keyed, ...headers }, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) })
    const text = await res.text()
    return { status: res.status, headers: res.headers, text, body: text === '' ? undefined : JSON.parse(text) }
  }
}

/** Where the demo keeps its data: the environment that selects it, and what the test removes afterwards. */
export interface Place {
  readonly env: Record<string, string>
  /** Whether what it keeps outlives the app. */
  readonly keeps: boolean
  /** A PostgreSQL database other instances (and the test) can open too. */
  readonly databaseUrl?: string
  drop (): Promise<void>
}

/** The stores, each making a fresh place; `label` names the temporary directories and schemas. */
export function places (label: string): ReadonlyArray<{ name: string, skip: string | false, make: () => Promise<Place> }> {
  return [
    { name: 'memory', skip: false, make: async () => ({ env: { STORE: 'memory' }, keeps: false, drop: async () => {} }) },
    {
      name: 'PGlite',
      skip: false,
      make: async () => {
        const dir = await mkdtemp(join(tmpdir(), `${label}-`))
        return { env: { STORE: 'pglite', DATA_DIR: join(dir, 'data') }, keeps: true, drop: () => rm(dir, { recursive: true, force: true }) }
      }
    },
    {
      name: 'PostgreSQL',
      skip: process.env.DATABASE_URL === undefined ? 'needs DATABASE_URL' : false,
      make: async () => {
        const url = new URL(process.env.DATABASE_URL as string)
        const schema = `apic_test_${label.replaceAll('-', '_')}_${randomBytes(4).toString('hex')}`
        const admin = new pg.Pool({ connectionString: url.href })
        await admin.query(`CREATE SCHEMA "${schema}"`)
        // The demo has no schema setting: the connection's search_path puts its tables in the test schema.
        url.searchParams.set('options', `-c search_path=${schema}`)
        return {
          env: { DATABASE_URL: url.href },
          keeps: true,
          databaseUrl: url.href,
          drop: async () => {
            await admin.query(`DROP SCHEMA "${schema}" CASCADE`)
            await admin.end()
          }
        }
      }
    }
  ]
}

/** A running demo app: its address, its client, and closing it (once). */
export interface Instance { readonly base: string, readonly api: Api, close (): Promise<void> }

export async function open (place: Place): Promise<Instance> {
  const app = await buildDemoApp(loadConfig({ ...place.env, ...demoEnv }), { logger: false })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  // Connections with no request in flight are closed with the app: fetch leaves one open, unused,
  // after an event stream is cancelled, which Node does not count as idle and keeps for 70 s.
  const quiet = new Set<Socket>()
  app.server.on('connection', (socket: Socket) => { quiet.add(socket); socket.once('close', () => quiet.delete(socket)) })
  app.server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    quiet.delete(request.socket)
    response.once('finish', () => quiet.add(request.socket))
  })
  let closed: Promise<void> | undefined
  const close = async () => {
    const closing = app.close()
    for (const socket of quiet) socket.destroy()
    await closing
  }
  return { base, api: client(base), close: () => (closed ??= close()) }
}

interface TestLike { teardown (fn: () => unknown): void }

/** A fresh place of `where` for test `t`, and `start` to run demo apps on it; all closed, then the place dropped, when the test ends. */
export async function placeFor (t: TestLike, where: { make: () => Promise<Place> }): Promise<{ place: Place, start: () => Promise<Instance> }> {
  const place = await where.make()
  const instances: Instance[] = []
  t.teardown(async () => {
    for (const instance of instances) await instance.close()
    await place.drop()
  })
  return { place, start: async () => { const instance = await open(place); instances.push(instance); return instance } }
}

export const unique = (label: string) => `${label} ${randomBytes(6).toString('hex')}`
