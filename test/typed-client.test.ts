// A typed client works against the definition (spec "What the service does" 3): types generated
// from the served document with openapi-typescript's default flags compile under tsc --strict
// together with an openapi-fetch client with its default serializer
// (test/fixtures/typed-client/client.ts), which then drives the demo over HTTP.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import openapiTS, { astToString } from 'openapi-typescript'
import { buildDemoApp } from '../demo/app.js'
import { loadConfig } from '../demo/config.js'

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
const client = readFileSync(new URL('./fixtures/typed-client/client.ts', import.meta.url), 'utf8')

t.test('types generated from the document drive the demo through openapi-fetch, compiled strict', async t => {
  const app = await buildDemoApp(loadConfig({ STORE: 'memory', CURSOR_SECRET: 'a-test-secret-of-enough-length' }))
  t.teardown(() => app.close())
  const origin = await app.listen({ host: '127.0.0.1', port: 0 })
  const document = await (await fetch(`${origin}/v1/openapi.json`)).json()

  const types = astToString(await openapiTS(document))
  const dir = t.testdir({
    'api.d.ts': types,
    'client.ts': client,
    'tsconfig.json': JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', skipLibCheck: true, types: [] },
      files: ['client.ts']
    })
  })
  const compiled = spawnSync(process.execPath, [tsc, '-p', dir], { encoding: 'utf8' })
  t.equal(compiled.status, 0, `tsc --strict compiles the client: ${compiled.stdout}${compiled.stderr}`)

  const { roundTrip } = await import(pathToFileURL(join(dir, 'client.ts')).href) as { roundTrip: (baseUrl: string, token: string) => Promise<Record<string, unknown>> }
  const result = await roundTrip(`${origin}/v1`, 'dev-token')
  t.match(result.created, { status: 201, location: /^\/v1\/books\/[0-9a-f-]+$/, title: 'Owls Do Cry', available: true }, 'the default filled in')
  t.same(result.pages, [
    ['Runaway', 'Lives of Girls and Women'], ['Dance of the Happy Shades', 'Scented Gardens for the Blind'], ['Faces in the Water', 'Owls Do Cry']
  ], 'sorted by -year then title, every next link followed to the end')
  t.same(result.authorsOfFirst, ['Alice Munro', 'Alice Munro'], 'expanded')
  t.same(result.filtered, { status: 200, titles: ['Owls Do Cry', 'Faces in the Water', 'Runaway'] }, 'simple filters match any of their values')
  t.same(result.invalid, { status: 400, type: '/v1/problems/query-invalid', names: ['filter'] }, 'a typed 400 problem')
  t.same(result.stale, { status: 412, type: '/v1/problems/precondition-failed' }, 'a stale If-Match is a typed problem')
  t.match(result.patched, { status: 200, year: undefined, rating: 4.5, etag: /^"\d+"$/ }, 'null removed the year')
  t.match(result.replaced, { status: 200, id: /^[0-9a-f-]+$/ })
  t.same(result.deleted, { status: 204 })
  t.same(result.gone, { status: 404, type: '/v1/problems/not-found' })
})

t.test('a client that breaks the document\'s types does not compile', async t => {
  const app = await buildDemoApp(loadConfig({ STORE: 'memory', CURSOR_SECRET: 'a-test-secret-of-enough-length' }))
  t.teardown(() => app.close())
  const document = (await app.inject({ url: '/v1/openapi.json' })).json()
  const dir = t.testdir({
    'api.d.ts': astToString(await openapiTS(document)),
    'client.ts': [
      "import createClient from 'openapi-fetch'",
      "import type { components, paths } from './api.js'",
      "const client = createClient<paths>({ baseUrl: 'http://127.0.0.1/v1' })",
      "export const wrong = client.GET('/books', { params: { query: { sort: ['colour'] } } })",
      // openapi-fetch's body type (an intersection) escapes excess-property checks; the component's does not.
      "export const withId: components['schemas']['BookCreate'] = { id: 'mine', title: 'T', authorId: 'a' }"
    ].join('\n'),
    'tsconfig.json': JSON.stringify({ compilerOptions: { strict: true, noEmit: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', skipLibCheck: true, types: [] }, files: ['client.ts'] })
  })
  const compiled = spawnSync(process.execPath, [tsc, '-p', dir], { encoding: 'utf8' })
  t.not(compiled.status, 0)
  t.match(compiled.stdout, /client\.ts\(4,.*"colour"/s, 'sort accepts only the documented keys')
  t.match(compiled.stdout, /client\.ts\(5,.*'id' does not exist in type '\{ title: string; authorId: string; year\?: number \| null \| undefined; rating\?: number \| null \| undefined; available\?: boolean \| undefined; \}'/s,
    'a create body has no id, and available (with a default) is optional')
})
