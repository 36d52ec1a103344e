// What `npm start` prints once it listens (docs/demo-contract.md, "Starting it"); the default tokens and
// the printed curl line are checked against the running demo in server.test.ts.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { loadConfig } from '../demo/config.js'
import { welcome } from '../demo/welcome.js'

t.test('the tokens of API_TOKENS are listed with their users and rights, and the curl line uses the first', async t => {
  const lines = welcome('http://0.0.0.0:8081', loadConfig({ API_TOKENS: 'reader:read,a-longer-writer:write:ann,boss:admin:the-admin' }))
  t.same(lines.slice(4), [
    '  Tokens (Authorization: Bearer <token>, from API_TOKENS):',
    '    reader           user reader     read: GET, HEAD and OPTIONS only',
    '    a-longer-writer  user ann        write: every operation',
    '    boss             user the-admin  admin: every operation; sees every review and moderatorNote',
    'Try:',
    "  curl -H 'Authorization: Bearer reader' http://0.0.0.0:8081/v1/books"
  ])
})

t.test('the default tokens', async t => {
  t.same(welcome('http://127.0.0.1:3000', loadConfig({})).slice(4, 10), [
    '  Tokens (Authorization: Bearer <token>, from API_TOKENS):',
    '    dev-token    user dev     write: every operation',
    '    read-token   user reader  read: GET, HEAD and OPTIONS only',
    '    alice-token  user alice   write: every operation',
    '    bob-token    user bob     write: every operation',
    '    admin-token  user admin   admin: every operation; sees every review and moderatorNote'
  ])
})

t.test('with no tokens it says so and offers /health, which needs none', async t => {
  t.same(welcome('http://127.0.0.1:3000', loadConfig({ API_TOKENS: '' })), [
    'Books demo API is running.',
    '  API:      http://127.0.0.1:3000/v1',
    '  Docs:     http://127.0.0.1:3000/v1/docs  (no token needed)',
    '  OpenAPI:  http://127.0.0.1:3000/v1/openapi.json',
    '  Tokens:   none (API_TOKENS is empty)',
    'Try:',
    '  curl http://127.0.0.1:3000/health'
  ])
})

t.test('a start that wrote the sample catalogue says so, with what it holds and how to turn it off', async t => {
  const lines = welcome('http://127.0.0.1:3000', loadConfig({}), 'seeded')
  t.equal(lines[4], '  Sample:   3 authors, 5 books and 4 reviews written into the empty store (SEED=false skips this)')
  t.equal(lines[5], '  Tokens (Authorization: Bearer <token>, from API_TOKENS):')
  for (const outcome of ['not empty', 'written elsewhere', 'off'] as const) {
    t.notOk(welcome('http://127.0.0.1:3000', loadConfig({}), outcome).some(line => line.includes('Sample')), `${outcome}: no sample line`)
  }
})

t.test('the README shows what a first start prints, as it prints it', async t => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
  const shown = /### First run of the demo\n[^]*?```text\n([^]*?)\n```/.exec(readme)?.[1]
  t.equal(shown, welcome('http://127.0.0.1:3000', loadConfig({}), 'seeded').join('\n'))
})
