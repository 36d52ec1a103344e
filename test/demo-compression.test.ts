// Compression on the demo (docs/demo-contract.md: "Responses of 1 KB or more are compressed (`br`,
// `gzip`) when the client's Accept-Encoding asks for it, with Vary: Accept-Encoding; the OpenAPI
// document and the docs page's assets included"), from outside over HTTP: node:http decodes
// nothing, so each body is decoded here with node:zlib and compared with the uncompressed answer.
import t from 'tap'
import { request } from 'node:http'
import type { IncomingHttpHeaders } from 'node:http'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { placeFor, places, unique } from './helpers/demo-http.js'

interface Raw { readonly status: number, readonly headers: IncomingHttpHeaders, readonly body: Buffer }

function get (base: string, path: string, headers: Record<string, string>): Promise<Raw> {
  return new Promise((resolve, reject) => {
    request(`${base}${path}`, { headers: { authorization: 'Bearer read-token', ...headers } }, res => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode as number, headers: res.headers, body: Buffer.concat(chunks) }))
    }).on('error', reject).end()
  })
}

const decode = (res: Raw) => res.headers['content-encoding'] === 'br' ? brotliDecompressSync(res.body) : res.headers['content-encoding'] === 'gzip' ? gunzipSync(res.body) : res.body
const varyNames = (res: Raw) => String(res.headers.vary).toLowerCase().split(/\s*,\s*/)

const memory = places('demo-compression')[0]
t.test('the demo compresses answers of 1 KB or more as Accept-Encoding asks, with Vary: Accept-Encoding', async t => {
  const { start } = await placeFor(t, memory)
  const { base, api } = await start()
  const author = await api('admin', 'POST', '/v1/authors', { body: { name: unique('Author') } })
  for (let i = 0; i < 20; i++) await api('admin', 'POST', '/v1/books', { body: { title: unique('Book'), authorId: author.body.data.author.id } })
  const { book } = (await api('admin', 'POST', '/v1/books', { body: { title: unique('Book'), authorId: author.body.data.author.id } })).body.data

  for (const path of ['/v1/books?pageSize=20', '/v1/openapi.json', '/v1/docs/js/scalar.js', '/v1/docs/']) {
    const plain = await get(base, path, {})
    t.equal(plain.status, 200, path)
    t.same([plain.headers['content-encoding'], varyNames(plain).includes('accept-encoding')], [undefined, true], `${path}: as it is without Accept-Encoding, varying on it`)
    for (const coding of ['br', 'gzip']) {
      const res = await get(base, path, { 'accept-encoding': coding })
      const compressed = plain.body.length >= 1024
      t.equal(res.headers['content-encoding'], compressed ? coding : undefined, `${path} (${plain.body.length} bytes), Accept-Encoding: ${coding}`)
      t.ok(varyNames(res).includes('accept-encoding'), 'Vary names Accept-Encoding')
      t.ok(decode(res).equals(plain.body), `${path}: ${res.body.length} bytes, decoded the same`)
    }
  }
  const small = await get(base, `/v1/books/${book.id as string}`, { 'accept-encoding': 'br, gzip' })
  t.ok(small.body.length < 1024)
  t.same([small.status, small.headers['content-encoding'], varyNames(small).includes('accept-encoding')], [200, undefined, true], 'under 1 KB: as it is, varying on Accept-Encoding')
  const refused = await get(base, '/v1/books?pageSize=20', { 'accept-encoding': 'identity;q=1, *;q=0' })
  t.same([refused.status, refused.headers['content-encoding']], [200, undefined], 'no coding accepted: the body as it is')
})
