// The demo's origins (docs/demo-contract.md, ALLOWED_ORIGINS): the listed ones, and its own origin, which
// the docs page's console sends from (a browser sends Origin on a same-origin POST); any other is 403.
import t from 'tap'
import { buildDemoApp } from '../demo/app.js'
import { loadConfig } from '../demo/config.js'

t.test('the demo accepts ALLOWED_ORIGINS and its own origin, and refuses any other', async t => {
  const app = await buildDemoApp(loadConfig({ STORE: 'memory', SEED: 'false', CURSOR_SECRET: 'a-test-secret-of-enough-length' }), { logger: false })
  t.teardown(() => app.close())
  const own = await app.listen({ port: 0, host: '127.0.0.1' })
  const create = async (origin: string) => await fetch(`${own}/v1/authors`, {
    method: 'POST',
    headers: { authorization: 'Bearer dev-token', 'content-type': 'application/json', origin },
    body: JSON.stringify({ name: 'From a page' })
  })
  t.equal((await create(own)).status, 201, 'its own origin')
  const listed = await create('http://localhost:8080')
  t.equal(listed.status, 201, 'the listed origin')
  t.equal(listed.headers.get('access-control-allow-origin'), 'http://localhost:8080', 'which may read the answer cross-origin')
  for (const origin of ['http://evil.example', own.replace('127.0.0.1', 'localhost'), own.replace('http:', 'https:')]) {
    const res = await create(origin)
    t.equal(res.status, 403, `${origin} is refused`)
    t.equal(res.headers.get('content-type'), 'application/problem+json; charset=utf-8')
  }
})
