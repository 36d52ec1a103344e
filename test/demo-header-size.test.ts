// The lean header profile (spec "Response headers"): a RETRIEVE of the demo, as a client receives
// it over a socket, carries the spec's security headers and no browser-document ones, in about
// 700 bytes of headers, status line included (issue 20: "at most ~700"): 703 with the feature
// policy under the spec's name, Feature-Policy (12 bytes more than Permissions-Policy's syntax).
import { request } from 'node:http'
import t from 'tap'
import { buildDemoApp } from '../demo/app.js'
import { loadConfig } from '../demo/config.js'

/** The head of a response (status line and header lines, each ending in CRLF) as sent. */
function responseHead (port: number, path: string, headers: Record<string, string>): Promise<{ head: string, names: string[] }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers }, res => {
      const lines = [`HTTP/${res.httpVersion} ${res.statusCode as number} ${res.statusMessage as string}`]
      const names: string[] = []
      for (let i = 0; i < res.rawHeaders.length; i += 2) {
        lines.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`)
        names.push(res.rawHeaders[i].toLowerCase())
      }
      res.resume()
      res.on('end', () => resolve({ head: lines.map(line => `${line}\r\n`).join(''), names }))
    })
    req.on('error', reject)
    req.end()
  })
}

t.test('a RETRIEVE of the demo answers with the lean profile, in about 700 bytes of headers', async t => {
  const app = await buildDemoApp(loadConfig({ STORE: 'memory' }), { logger: false })
  t.teardown(() => app.close())
  const write = { authorization: 'Bearer dev-token', 'content-type': 'application/json' }
  const author = (await app.inject({ method: 'POST', url: '/v1/authors', headers: write, payload: { name: 'Witi Ihimaera', born: '1944-02-07', country: 'NZ' } })).json()
  const book = (await app.inject({ method: 'POST', url: '/v1/books', headers: write, payload: { title: 'Pounamu, Pounamu', authorId: author.data.author.id, year: 1972 } })).json()
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const { head, names } = await responseHead(port, `/v1/books/${book.data.book.id as string}`, { authorization: 'Bearer read-token', accept: 'application/json' })
  t.match(head, /^HTTP\/1\.1 200 OK\r\n/)
  for (const name of ['cache-control', 'content-security-policy', 'strict-transport-security', 'x-content-type-options', 'x-frame-options', 'referrer-policy', 'feature-policy', 'ratelimit-policy', 'ratelimit', 'etag', 'request-id']) {
    t.ok(names.includes(name), `sends ${name}`)
  }
  for (const name of ['permissions-policy', 'cross-origin-opener-policy', 'cross-origin-resource-policy', 'origin-agent-cluster', 'x-dns-prefetch-control', 'x-download-options', 'x-permitted-cross-domain-policies', 'x-xss-protection']) {
    t.notOk(names.includes(name), `does not send ${name}`)
  }
  const bytes = Buffer.byteLength(head)
  t.ok(bytes <= 720, `${bytes} bytes of headers:\n${head}`)
})
