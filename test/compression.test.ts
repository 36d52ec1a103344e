// Response compression (http/compression.ts; demo contract: `br` and `gzip` on responses of 1 KB
// or more when Accept-Encoding asks, with Vary: Accept-Encoding): every body is decoded with
// node:zlib and compared byte for byte with the answer to the same request without compression.
// A compressed body is another representation: its ETag names the coding, If-Match takes it,
// If-None-Match answers 304 with the tag the client holds; HEAD carries GET's headers.
import t from 'tap'
import { request as httpRequest } from 'node:http'
import type { IncomingHttpHeaders } from 'node:http'
import { PassThrough } from 'node:stream'
import { brotliDecompressSync, createBrotliDecompress, createGunzip, gunzipSync } from 'node:zlib'
import Fastify from 'fastify'
import type { LightMyRequestResponse } from 'fastify'
import { Type } from '@sinclair/typebox'
import apiConventions, { defineResource, memoryStore } from '../lib/index.js'
import type { Store } from '../lib/index.js'
import { registerCompression, resolveCompression } from '../lib/http/compression.js'
import { demoResources } from '../demo/schemas/index.js'
import { buildApp } from './helpers/app.js'
import type { AppOverrides } from './helpers/app.js'

const Note = Type.Object({ id: Type.Readonly(Type.String()), text: Type.String({ maxLength: 20000 }) }, { additionalProperties: false })
const withNotes = (store: Store) => [...demoResources(store), defineResource({ name: 'notes', singular: 'note', schema: Note, store })]
const json = { 'content-type': 'application/json' }
const patchType = { 'content-type': 'application/merge-patch+json' }

/** The body as sent, decoded by the coding the answer names. */
function decoded (res: { headers: IncomingHttpHeaders | LightMyRequestResponse['headers'], rawPayload: Buffer }): Buffer {
  const coding = res.headers['content-encoding']
  if (coding === 'br') return brotliDecompressSync(res.rawPayload)
  if (coding === 'gzip') return gunzipSync(res.rawPayload)
  return res.rawPayload
}

async function appWithAuthors (t: Parameters<typeof buildApp>[0], overrides: AppOverrides = {}, count = 25) {
  const app = await buildApp(t, { resources: withNotes, ...overrides })
  for (let i = 0; i < count; i++) await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { name: `Author number ${i}`, country: 'GB' } })
  return app
}

/** A note whose representation is `size` bytes or so: compressed when over the threshold. */
async function newNote (app: Awaited<ReturnType<typeof buildApp>>, size: number) {
  const res = await app.inject({ method: 'POST', url: '/v1/notes', headers: json, payload: { text: 'lorem ipsum '.repeat(size / 12) } })
  return res.json().data.note as { id: string }
}

t.test('a list page of 1 KB or more is sent br or gzip as Accept-Encoding asks, the same bytes once decoded', async t => {
  const app = await appWithAuthors(t)
  const url = '/v1/authors?pageSize=20'
  const plain = await app.inject({ url })
  t.ok(plain.rawPayload.length >= 1024, `the page is ${plain.rawPayload.length} bytes`)
  t.equal(plain.headers['content-encoding'], undefined, 'no Accept-Encoding: as it is')
  for (const [acceptEncoding, coding] of [['br', 'br'], ['gzip', 'gzip'], ['gzip, deflate, br', 'br'], ['gzip;q=1, br;q=0.5', 'gzip'], ['br;q=0, *', 'gzip'], ['x-gzip', 'gzip']]) {
    const res = await app.inject({ url, headers: { 'accept-encoding': acceptEncoding } })
    t.equal(res.statusCode, 200)
    t.equal(res.headers['content-encoding'], coding, `Accept-Encoding: ${acceptEncoding}`)
    t.equal(res.headers.vary, 'Origin, Accept, Accept-Encoding', 'Accept-Encoding listed once')
    t.equal(Number(res.headers['content-length']), res.rawPayload.length, 'Content-Length is the compressed size')
    t.ok(res.rawPayload.length < plain.rawPayload.length / 2, `${coding}: ${res.rawPayload.length} of ${plain.rawPayload.length} bytes`)
    t.ok(decoded(res).equals(plain.rawPayload), 'decoded, the bytes sent without compression')
  }
})

t.test('identity, *;q=0 and codings the server does not offer get the body as it is, not 406', async t => {
  const app = await appWithAuthors(t)
  const url = '/v1/authors?pageSize=20'
  const plain = await app.inject({ url })
  for (const acceptEncoding of ['identity', '*;q=0', 'compress', 'deflate', 'zstd', 'br;q=0, gzip;q=0', '']) {
    const res = await app.inject({ url, headers: { 'accept-encoding': acceptEncoding } })
    t.same([res.statusCode, res.headers['content-encoding'], res.headers.vary], [200, undefined, 'Origin, Accept, Accept-Encoding'], `Accept-Encoding: ${acceptEncoding}`)
    t.ok(res.rawPayload.equals(plain.rawPayload))
  }
})

t.test('below the threshold nothing is compressed, and the answer still varies on Accept-Encoding', async t => {
  const app = await appWithAuthors(t, {}, 1)
  const res = await app.inject({ url: '/v1/authors', headers: { 'accept-encoding': 'br, gzip' } })
  t.ok(res.rawPayload.length < 1024, `${res.rawPayload.length} bytes`)
  t.same([res.headers['content-encoding'], res.headers.vary], [undefined, 'Origin, Accept, Accept-Encoding'])
  t.equal(Number(res.headers['content-length']), res.rawPayload.length)
})

t.test('threshold and encodings are options', async t => {
  const app = await appWithAuthors(t, { compression: { threshold: 100, encodings: ['gzip'] } }, 1)
  const small = await app.inject({ url: '/v1/authors', headers: { 'accept-encoding': 'br, gzip' } })
  t.ok(small.rawPayload.length < 1024)
  t.equal(small.headers['content-encoding'], 'gzip', 'over 100 bytes; br is not offered')
  t.same(JSON.parse(decoded(small).toString()), (await app.inject({ url: '/v1/authors' })).json())
  t.equal((await app.inject({ url: '/v1/authors', headers: { 'accept-encoding': 'br' } })).headers['content-encoding'], undefined, 'br only: as it is')
})

t.test('compression: false sends every body as it is, and Vary does not name Accept-Encoding', async t => {
  const app = await appWithAuthors(t, { compression: false })
  const res = await app.inject({ url: '/v1/authors?pageSize=20', headers: { 'accept-encoding': 'br, gzip' } })
  t.same([res.statusCode, res.headers['content-encoding'], res.headers.vary], [200, undefined, 'Origin, Accept'])
  const note = await newNote(app, 4000)
  const item = await app.inject({ url: `/v1/notes/${note.id}`, headers: { 'accept-encoding': 'br', 'if-none-match': '"1+br"' } })
  t.same([item.statusCode, item.headers.etag], [200, '"1"'], 'no coded tag is current')
})

t.test('a problem of 1 KB or more is compressed too, a small one is not', async t => {
  const app = await appWithAuthors(t, {}, 0)
  const url = `/v1/authors?${Array.from({ length: 30 }, (_, i) => `unknown${i}=1`).join('&')}`
  const plain = await app.inject({ url })
  t.equal(plain.statusCode, 400)
  t.ok(plain.rawPayload.length >= 1024, `the problem is ${plain.rawPayload.length} bytes`)
  for (const coding of ['br', 'gzip']) {
    const res = await app.inject({ url, headers: { 'accept-encoding': coding } })
    t.same([res.statusCode, res.headers['content-type'], res.headers['content-encoding']], [400, 'application/problem+json; charset=utf-8', coding])
    t.ok(decoded(res).equals(plain.rawPayload))
  }
  const small = await app.inject({ url: '/v1/authors/nope', headers: { 'accept-encoding': 'br' } })
  t.same([small.statusCode, small.headers['content-encoding'], small.headers.vary], [404, undefined, 'Origin, Accept, Accept-Encoding'])
})

t.test('the OpenAPI document, the docs page\'s script and the problem pages are compressed', async t => {
  const app = await buildApp(t, { docsPage: true })
  for (const url of ['/v1/openapi.json', '/v1/docs/js/scalar.js', '/v1/problems']) {
    const plain = await app.inject({ url })
    t.equal(plain.statusCode, 200)
    for (const coding of ['br', 'gzip']) {
      const res = await app.inject({ url, headers: { 'accept-encoding': coding } })
      t.same([res.statusCode, res.headers['content-encoding'], res.headers.vary], [200, coding, 'Origin, Accept, Accept-Encoding'], `${url} ${coding}`)
      t.equal(Number(res.headers['content-length']), res.rawPayload.length)
      t.ok(decoded(res).equals(plain.rawPayload), `${url}: ${res.rawPayload.length} bytes for ${plain.rawPayload.length}`)
    }
  }
})

// That each is compressed once per coding is a matter of time, measured in benchmarks/, not here.
t.test('the constant bodies (the document, the script) are sent as made: the same bytes each time, HEAD with GET\'s headers', async t => {
  const app = await buildApp(t, { docsPage: true })
  for (const url of ['/v1/openapi.json', '/v1/docs/js/scalar.js']) {
    const first = await app.inject({ url, headers: { 'accept-encoding': 'br' } })
    const head = await app.inject({ method: 'HEAD', url, headers: { 'accept-encoding': 'br' } })
    const again = await app.inject({ url, headers: { 'accept-encoding': 'gzip;q=0.5, br' } })
    t.ok(again.rawPayload.equals(first.rawPayload), `${url}: the same bytes`)
    t.same([head.headers['content-encoding'], head.headers['content-length'], head.rawPayload.length], ['br', String(first.rawPayload.length), 0], 'HEAD: GET\'s headers')
    const identity = await app.inject({ url, headers: { 'accept-encoding': 'identity' } })
    t.same([identity.headers['content-encoding'], identity.rawPayload.length], [undefined, Number(identity.headers['content-length'])], 'no coding accepted: as it is')
    t.ok(decoded(first).equals(identity.rawPayload))
  }
})

t.test('the host\'s own routes are not compressed by the plugin', async t => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  await app.register(apiConventions, { prefix: '/v1', cursorSecret: 'a-test-secret-of-enough-length', resources: demoResources(memoryStore()) })
  app.get('/host', async () => ({ text: 'x'.repeat(5000) }))
  const res = await app.inject({ url: '/host', headers: { 'accept-encoding': 'br' } })
  t.same([res.statusCode, res.headers['content-encoding'], res.headers.vary, res.rawPayload.length], [200, undefined, undefined, 5011])
})

t.test('a compressed representation has its own strong ETag, naming the coding; a small one keeps its tag', async t => {
  const app = await appWithAuthors(t, {}, 1)
  const big = await newNote(app, 4000)
  const url = `/v1/notes/${big.id}`
  const plain = await app.inject({ url })
  t.equal(plain.headers.etag, '"1"')
  for (const coding of ['br', 'gzip']) {
    const res = await app.inject({ url, headers: { 'accept-encoding': coding } })
    t.same([res.headers['content-encoding'], res.headers.etag], [coding, `"1+${coding}"`])
    t.ok(decoded(res).equals(plain.rawPayload))
  }
  const projected = await app.inject({ url: `${url}?fields=text`, headers: { 'accept-encoding': 'br' } })
  t.match(projected.headers.etag, /^"1\.[\w-]{12}\+br"$/, 'a variant\'s tag, coded')
  const small = await newNote(app, 100)
  const smallRes = await app.inject({ url: `/v1/notes/${small.id}`, headers: { 'accept-encoding': 'br' } })
  t.same([smallRes.headers['content-encoding'], smallRes.headers.etag], [undefined, '"1"'], 'sent as it is: the same representation, the same tag')
})

t.test('If-None-Match: 304 with the tag the client holds, in a coding it still accepts; no body, no Content-Encoding', async t => {
  const app = await appWithAuthors(t, {}, 0)
  const { id } = await newNote(app, 4000)
  const url = `/v1/notes/${id}`
  const cases: ReadonlyArray<readonly [string, string, number, string, string | undefined]> = [
    // [Accept-Encoding, If-None-Match, status, ETag, Content-Encoding]
    ['br', '"1+br"', 304, '"1+br"', undefined],
    ['gzip, br', '"1+gzip"', 304, '"1+gzip"', undefined],
    ['x-gzip', '"1+gzip"', 304, '"1+gzip"', undefined],
    ['br', '"1"', 304, '"1"', undefined],
    ['br', '"0+br", W/"1+br"', 304, '"1+br"', undefined],
    ['br', '*', 304, '"1"', undefined],
    ['', '"1"', 304, '"1"', undefined],
    // The client holds gzip and now accepts only br: that one is not acceptable, the br one is sent.
    ['br', '"1+gzip"', 200, '"1+br"', 'br'],
    ['identity', '"1+br"', 200, '"1"', undefined],
    ['br', '"2+br"', 200, '"1+br"', 'br']
  ]
  for (const [acceptEncoding, ifNoneMatch, status, etag, coding] of cases) {
    for (const method of ['GET', 'HEAD'] as const) {
      const res = await app.inject({ method, url, headers: { 'accept-encoding': acceptEncoding, 'if-none-match': ifNoneMatch } })
      t.same([res.statusCode, res.headers.etag, res.headers['content-encoding'], res.headers.vary], [status, etag, coding, 'Origin, Accept, Accept-Encoding'], `${method} Accept-Encoding: ${acceptEncoding}, If-None-Match: ${ifNoneMatch}`)
      if (status === 304) t.equal(res.rawPayload.length, 0)
    }
  }
})

t.test('If-Match takes the coded tags of the current version, strong only', async t => {
  const app = await appWithAuthors(t, {}, 0)
  const { id } = await newNote(app, 4000)
  const url = `/v1/notes/${id}`
  for (const ifMatch of ['W/"1+br"', '"1+zstd"', '"1+br+br"', '"0+br"', '"1br"']) {
    const res = await app.inject({ method: 'PATCH', url, headers: { ...patchType, 'if-match': ifMatch }, payload: { text: 'x' } })
    t.equal(res.statusCode, 412, `If-Match: ${ifMatch}`)
  }
  const written = await app.inject({ method: 'PATCH', url, headers: { ...patchType, 'if-match': '"1+br"', 'accept-encoding': 'gzip' }, payload: { text: 'short now' } })
  t.same([written.statusCode, written.headers.etag, written.headers['content-encoding']], [200, '"2"', undefined], 'a small answer: its own tag')
  const grown = await app.inject({ method: 'PUT', url, headers: { ...json, 'if-match': '"2"', 'accept-encoding': 'gzip' }, payload: { text: 'long '.repeat(1000) } })
  t.same([grown.statusCode, grown.headers.etag, grown.headers['content-encoding']], [200, '"3+gzip"', 'gzip'])
  const gone = await app.inject({ method: 'DELETE', url, headers: { 'if-match': '"3+gzip"', 'accept-encoding': 'br' } })
  t.same([gone.statusCode, gone.headers['content-encoding'], gone.rawPayload.length], [204, undefined, 0], '204 untouched')
})

t.test('HEAD carries the headers GET sends: Content-Encoding, the compressed Content-Length, the coded ETag', async t => {
  const app = await appWithAuthors(t)
  const { id } = await newNote(app, 4000)
  for (const url of ['/v1/authors?pageSize=20', `/v1/notes/${id}`, '/v1/problems']) {
    const get = await app.inject({ url, headers: { 'accept-encoding': 'br' } })
    const head = await app.inject({ method: 'HEAD', url, headers: { 'accept-encoding': 'br' } })
    const names = ['content-encoding', 'content-length', 'etag', 'vary', 'content-type']
    t.same(Object.fromEntries(names.map(n => [n, head.headers[n]])), Object.fromEntries(names.map(n => [n, get.headers[n]])), url)
    t.equal(head.rawPayload.length, 0)
  }
})

t.test('an Idempotency-Key replay is compressed as its own request asks, its ETag with it', async t => {
  const app = await appWithAuthors(t, {}, 0)
  const send = (acceptEncoding: string) => app.inject({ method: 'POST', url: '/v1/notes', headers: { ...json, 'idempotency-key': 'k-1', 'accept-encoding': acceptEncoding }, payload: { text: 'lorem ipsum '.repeat(400) } })
  const first = await send('identity')
  const replay = await send('br')
  t.same([first.statusCode, first.headers.etag, first.headers['content-encoding']], [201, '"1"', undefined])
  t.same([replay.statusCode, replay.headers.etag, replay.headers['content-encoding'], replay.headers['idempotent-replayed']], [201, '"1+br"', 'br', 'true'])
  t.ok(decoded(replay).equals(first.rawPayload))
})

/** GET over a real socket, the body as received (node:http decodes nothing). */
function get (port: number, path: string, headers: Record<string, string>): Promise<{ status: number, headers: IncomingHttpHeaders, rawPayload: Buffer }> {
  return new Promise((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port, path, headers }, res => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode as number, headers: res.headers, rawPayload: Buffer.concat(chunks) }))
    }).on('error', reject).end()
  })
}

t.test('over a socket: a large body streams chunked without Content-Length, a small one has the compressed length', async t => {
  const app = await appWithAuthors(t)
  // 150 KB: past @fastify/compress's synchronous path (at most 64 KB), through a zlib stream.
  for (let i = 0; i < 10; i++) await newNote(app, 15000)
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  const port = Number(new URL(address).port)
  const plain = await get(port, '/v1/notes', {})
  t.ok(plain.rawPayload.length > 65536, `${plain.rawPayload.length} bytes`)
  for (const coding of ['br', 'gzip']) {
    const res = await get(port, '/v1/notes', { 'accept-encoding': coding })
    t.same([res.status, res.headers['content-encoding'], res.headers['content-length'], res.headers['transfer-encoding']], [200, coding, undefined, 'chunked'])
    t.ok(decoded(res).equals(plain.rawPayload), `${res.rawPayload.length} bytes for ${plain.rawPayload.length}`)
    const page = await get(port, '/v1/authors?pageSize=20', { 'accept-encoding': coding })
    t.same([page.headers['content-encoding'], Number(page.headers['content-length'])], [coding, page.rawPayload.length])
  }
})

t.test('a streaming route (config.streams) is flushed through the compressor at each write, not buffered to the end', async t => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  const streams = new Map<string, PassThrough>()
  await app.register(async scope => {
    await registerCompression(scope, resolveCompression({ threshold: 1 }))
    for (const [path, config] of [['/rows', { streams: true }], ['/buffered', {}]] as const) {
      scope.get(path, { config }, (_request, reply) => {
        const body = new PassThrough()
        streams.set(path, body)
        body.write('id,title,year\n')
        return reply.type('text/csv').send(body)
      })
    }
  })
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  /** The text decoded from the first bytes that arrive within `wait` ms, or null if none do; then the stream ends. */
  const firstRow = (path: string, coding: string, wait: number) => new Promise<string | null>((resolve, reject) => {
    let settled = false
    const settle = (text: string | null) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve(text)
      streams.get(path)?.end('1,Dune,1965\n')
    }
    const timer = setTimeout(() => settle(null), wait)
    httpRequest(`${address}${path}`, { headers: { 'accept-encoding': coding } }, res => {
      t.equal(res.headers['content-encoding'], coding)
      const decoder = coding === 'br' ? createBrotliDecompress() : createGunzip()
      decoder.once('data', (chunk: Buffer) => settle(String(chunk)))
      res.pipe(decoder).on('error', reject)
    }).on('error', reject).end()
  })
  for (const coding of ['br', 'gzip']) {
    t.equal(await firstRow('/rows', coding, 5000), 'id,title,year\n', `${coding}: the first row arrives while the stream is open`)
    t.equal(await firstRow('/buffered', coding, 300), null, `${coding}: without the switch the compressor holds it`)
  }
})
