// Records what the demo answers to a fixed, varied set of requests (every operation of every
// resource, as each demo caller, with good and bad input, conditional requests, Prefer, XML, forms,
// batches, OData names and compression), normalised where answers may differ between runs: ids the
// server makes, dates, paging tokens and request ids. Two trees answer alike when their records
// are equal byte for byte; a refactoring that must not change behaviour is checked with it:
//
//   npm run build:demo && node test/hardening/record-answers.mjs > before.jsonl   (on the old tree)
//   npm run build:demo && node test/hardening/record-answers.mjs > after.jsonl    (on the new tree)
//   diff before.jsonl after.jsonl
//
// It runs the tree's own build (dist/demo/server.js) on the memory store with the sample catalogue.
import { spawn } from 'node:child_process'

const server = spawn(process.execPath, ['dist/demo/server.js'], {
  env: { ...process.env, STORE: 'memory', PORT: '0', SEED: 'true', LOG_LEVEL: 'warn', CURSOR_SECRET: 'record-answers-secret-of-some-length', RATE_LIMIT_MAX: '100000', DATABASE_URL: '' },
  stdio: ['ignore', 'pipe', 'inherit']
})
const base = await new Promise((resolve, reject) => {
  let out = ''
  server.stdout.on('data', chunk => {
    out += chunk
    const found = /API:\s+(http:\/\/\S+)\/v1/.exec(out)
    if (found) resolve(found[1])
  })
  server.on('exit', code => reject(new Error(`the demo exited (${code}) before listening`)))
})

const tokens = { dev: 'dev-token', read: 'read-token', alice: 'alice-token', bob: 'bob-token', admin: 'admin-token' }
const as = who => who === null ? {} : { authorization: `Bearer ${tokens[who] ?? who}` }
const json = { 'content-type': 'application/json' }
const ids = {
  hulme: '018cc251-f400-7000-8000-00000000a001',
  achebe: '018cc251-f400-7000-8000-00000000a002',
  bone: '018cc251-f400-7000-8000-00000000b001',
  things: '018cc251-f400-7000-8000-00000000b002',
  arrow: '018cc251-f400-7000-8000-00000000b003',
  cities: '018cc251-f400-7000-8000-00000000b004',
  review1: '018cc251-f400-7000-8000-00000000c001',
  review4: '018cc251-f400-7000-8000-00000000c004',
  missing: '018cc251-f400-7000-8000-0000000000ff'
}

// Headers whose values change from run to run or carry nothing about behaviour.
const varying = new Set(['date', 'request-id', 'x-request-id', 'keep-alive', 'connection', 'server-timing', 'ratelimit', 'ratelimit-reset', 'x-ratelimit-reset', 'retry-after'])
const made = new Map()
function normalise (text) {
  return text
    // Ids the server makes (UUIDv7 of this run), in order of first appearance; the sample's ids are fixed.
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/g, id => {
      if (id.startsWith('018cc251-f400-7000-8000-00000000')) return id
      if (!made.has(id)) made.set(id, `ID${made.size + 1}`)
      return made.get(id)
    })
    .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/g, 'TIME')
    .replace(/[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT/g, 'HTTPDATE')
    .replace(/token=[\w-]+/g, 'token=TOKEN').replace(/"token":"[\w-]+"/g, '"token":"TOKEN"')
}

async function send ({ method = 'GET', path, headers = {}, body }) {
  const res = await fetch(base + path, { method, headers: { 'accept-encoding': 'identity', ...headers }, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) })
  // fetch decodes a compressed body itself, and keeps Content-Encoding.
  const bytes = Buffer.from(await res.arrayBuffer())
  const kept = [...res.headers].filter(([name]) => !varying.has(name)).sort(([a], [b]) => a.localeCompare(b))
  return { method, path, status: res.status, headers: Object.fromEntries(kept), body: bytes.toString('utf8') }
}

const requests = []
const add = request => requests.push(request)
const callers = [null, 'read', 'dev', 'alice', 'bob', 'admin', 'not-a-token']
const lists = [
  '', '?pageSize=2', '?pageSize=2&offset=2', '?sort=-year,title', '?sort=title&fields=title,year', '?filter=year%20ge%201970',
  '?filter=year%20ge', '?year=1964', '?author.country=NG', '?expand=author', '?include=author', '?total=true', '?pageSize=101',
  '?colour=red', '?$filter=year%20lt%201980&$orderby=year%20desc&$top=2', '?$select=title&$count=true', '?sort=-year&$orderby=year', '?pageOffset=1&pageSize=2'
]
for (const who of callers) {
  for (const query of lists) add({ path: `/v1/books${query}`, headers: as(who) })
  add({ path: '/v1/authors?expand=books&sort=name', headers: as(who) })
  add({ path: '/v1/reviews', headers: as(who) })
  add({ path: '/v1/reviews?fields=rating,moderatorNote', headers: as(who) })
  add({ path: `/v1/books/${ids.bone}/reviews`, headers: as(who) })
  add({ path: `/v1/authors/${ids.achebe}/books?sort=year`, headers: as(who) })
  add({ path: `/v1/books/${ids.things}`, headers: as(who) })
  add({ path: `/v1/books/${ids.things}?expand=author&fields=title`, headers: as(who) })
  add({ path: `/v1/books/${ids.missing}`, headers: as(who) })
  add({ path: `/v1/reviews/${ids.review4}`, headers: as(who) })
  add({ method: 'HEAD', path: `/v1/books/${ids.arrow}`, headers: as(who) })
  add({ method: 'OPTIONS', path: '/v1/books', headers: as(who) })
  add({ method: 'OPTIONS', path: `/v1/reviews/${ids.review1}`, headers: as(who) })
  add({ path: `/v1/books/${ids.cities}`, headers: { ...as(who), accept: 'application/xml' } })
  add({ path: `/v1/books/${ids.cities}`, headers: { ...as(who), 'if-none-match': '"1"' } })
  add({ path: '/v1/books', headers: { ...as(who), 'if-none-match': '*' } })
  add({ path: '/v1/books?pageSize=50', headers: { ...as(who), 'accept-encoding': 'gzip' } })
}
for (const who of ['dev', 'alice', 'bob', 'admin', 'read']) {
  add({ method: 'POST', path: '/v1/authors', headers: { ...as(who), ...json }, body: { name: `Author of ${who}`, country: 'NZ' } })
  add({ method: 'POST', path: '/v1/authors', headers: { ...as(who), ...json, prefer: 'return=minimal' }, body: { name: 'Minimal' } })
  add({ method: 'POST', path: '/v1/authors', headers: { ...as(who), ...json }, body: { name: '', colour: 'red' } })
  add({ method: 'POST', path: '/v1/authors', headers: { ...as(who), 'content-type': 'application/x-www-form-urlencoded' }, body: 'name=Form%20Author&born=1950-01-02' })
  add({ method: 'POST', path: '/v1/authors', headers: { ...as(who), 'content-type': 'text/plain' }, body: 'name' })
  add({ method: 'POST', path: '/v1/books', headers: { ...as(who), ...json }, body: { title: `Book of ${who}`, authorId: ids.hulme, year: 2001 } })
  add({ method: 'POST', path: '/v1/books', headers: { ...as(who), ...json }, body: { title: 'Orphan', authorId: ids.missing } })
  add({ method: 'POST', path: '/v1/reviews', headers: { ...as(who), ...json }, body: { bookId: ids.arrow, rating: 4, text: `by ${who}` } })
  add({ method: 'POST', path: '/v1/reviews', headers: { ...as(who), ...json }, body: { bookId: ids.arrow, rating: 4, moderatorNote: 'mine' } })
  add({ method: 'PATCH', path: `/v1/books/${ids.arrow}`, headers: { ...as(who), ...json }, body: { rating: 3.5 } })
  add({ method: 'PATCH', path: `/v1/books/${ids.arrow}`, headers: { ...as(who), 'content-type': 'application/merge-patch+json', 'if-match': '"1"' }, body: { rating: 1 } })
  add({ method: 'PATCH', path: `/v1/books/${ids.arrow}`, headers: { ...as(who), ...json, prefer: 'return=minimal' }, body: { year: 1965 } })
  add({ method: 'PATCH', path: `/v1/reviews/${ids.review1}`, headers: { ...as(who), ...json }, body: { rating: 2 } })
  add({ method: 'PUT', path: `/v1/books/${ids.cities}`, headers: { ...as(who), ...json }, body: { title: 'Invisible Cities', authorId: '018cc251-f400-7000-8000-00000000a003', year: 1972 } })
  add({ method: 'PUT', path: `/v1/books/${ids.cities}`, headers: { ...as(who), ...json }, body: { id: ids.missing, title: 'X', authorId: ids.hulme } })
  add({ method: 'PUT', path: `/v1/books/${ids.missing}`, headers: { ...as(who), ...json }, body: { title: 'X', authorId: ids.hulme } })
  add({ method: 'DELETE', path: `/v1/authors/${ids.achebe}`, headers: as(who) })
  add({ method: 'DELETE', path: `/v1/books/${ids.missing}`, headers: as(who) })
  add({ method: 'DELETE', path: `/v1/reviews/${ids.review1}`, headers: { ...as(who), 'if-match': '"7"' } })
  add({ method: 'POST', path: '/v1/batch', headers: { ...as(who), ...json }, body: { operations: [{ op: 'create', resource: 'authors', lid: 'a', data: { name: `Batch ${who}` } }, { op: 'create', resource: 'books', data: { title: 'In a batch', authorId: { lid: 'a' } } }] } })
  add({ method: 'POST', path: '/v1/batch', headers: { ...as(who), ...json }, body: { operations: [{ op: 'delete', resource: 'books', id: ids.missing }] } })
  add({ method: 'POST', path: '/v1/books', headers: { ...as(who), ...json, 'idempotency-key': `"key-${who}"` }, body: { title: 'Keyed', authorId: ids.hulme } })
  add({ method: 'POST', path: '/v1/books', headers: { ...as(who), ...json, 'idempotency-key': `"key-${who}"` }, body: { title: 'Keyed', authorId: ids.hulme } })
  add({ method: 'GET', path: '/v1/books?sort=-year&pageSize=3', headers: as(who) })
}
add({ method: 'DELETE', path: '/v1/nothing-here', headers: as('dev') })
add({ method: 'PATCH', path: '/v1/books', headers: { ...as('dev'), ...json }, body: {} })

try {
  for (const request of requests) process.stdout.write(normalise(JSON.stringify(await send(request))) + '\n')
  process.stderr.write(`${requests.length} requests recorded\n`)
} finally {
  server.kill('SIGTERM')
}
