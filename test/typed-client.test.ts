// A typed client works against the definition (spec "What the service does" 3): types generated
// from the served document with openapi-typescript compile under tsc --strict together with an
// openapi-fetch client (test/fixtures/typed-client/client.ts), which then drives the demo over
// HTTP.
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

  // A default does not make a request member required (the server fills it in).
  const types = astToString(await openapiTS(document, { defaultNonNullable: false }))
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
  t.match(result.created, { status: 201, location: /^\/v1\/books\/[0-9a-f-]+$/, title: 'Owls Do Cry' })
  t.same(result.listed, { status: 200, titles: ['Faces in the Water', 'Owls Do Cry'], pageSize: 10 }, 'filtered by simple and dotted filters, sorted')
  t.same(result.stale, { status: 412, type: '/v1/problems/precondition-failed' }, 'a stale If-Match is a typed problem')
  t.match(result.updated, { status: 200, title: 'Owls Do Cry (1957)', etag: /^"\d+"$/ })
  t.same(result.deleted, { status: 204 })
  t.same(result.gone, { status: 404 })
})

t.test('a client that breaks the document\'s types does not compile', async t => {
  const app = await buildDemoApp(loadConfig({ STORE: 'memory', CURSOR_SECRET: 'a-test-secret-of-enough-length' }))
  t.teardown(() => app.close())
  const document = (await app.inject({ url: '/v1/openapi.json' })).json()
  const dir = t.testdir({
    'api.d.ts': astToString(await openapiTS(document, { defaultNonNullable: false })),
    'client.ts': [
      "import createClient from 'openapi-fetch'",
      "import type { paths } from './api.js'",
      "const client = createClient<paths>({ baseUrl: 'http://127.0.0.1/v1' })",
      "export const wrong = client.GET('/books', { params: { query: { sort: ['colour'] } } })"
    ].join('\n'),
    'tsconfig.json': JSON.stringify({ compilerOptions: { strict: true, noEmit: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', skipLibCheck: true, types: [] }, files: ['client.ts'] })
  })
  const compiled = spawnSync(process.execPath, [tsc, '-p', dir], { encoding: 'utf8' })
  t.not(compiled.status, 0)
  t.match(compiled.stdout, /client\.ts.*"colour"/s, 'sort accepts only the documented keys')
})
