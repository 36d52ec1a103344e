#!/usr/bin/env node
// Records the demo's answers to a fixed sequence of 510 requests, to compare two builds of the demo
// (before and after a refactor) answer by answer:
//
//   STORE=memory SEED=true CURSOR_SECRET=record-answers-secret-0123456789 RATE_LIMIT_MAX=1000000 \
//     PORT=3881 node dist/demo/server.js &          (after `npm run build:demo`, in each tree)
//   node scripts/record-answers.mjs http://127.0.0.1:3881 /tmp/answers-before.jsonl
//   … the same against the other build into /tmp/answers-after.jsonl, then diff the two files.
//
// Each recording needs a freshly started demo (the sequence writes). The demo is reached over HTTP
// only, so any build or store can be recorded; test/hardening/record-answers.mjs (360 requests, it
// starts the tree's own demo) is the older, smaller check: this one adds every resource's nested
// collections, several bad query parameters at once, the OpenAPI document and docs page, paging by
// token, 304 and 412 on every resource, more bad bodies and batches.
//
// The sequence is the same on every run: later requests use ids, ETags and paging links of earlier
// answers through named slots (`{A1}`, `{etag:A1}`, `{next:P1}`) filled from those answers, never
// from a guess. One JSON line per request: index, method, url, request (headers and body), status,
// headers (sorted by name; date, request-id, x-request-id and server-timing dropped: they differ on
// every request) and body (the bytes as text, decompressed when the answer was compressed).
//
// Masks, applied alike to the URL, the request and the answer; ids and ETags map each distinct value
// to a numbered placeholder in order of first appearance, so equal values stay equal:
// - `<idN>`: a UUID the server created (a CREATE's id, in bodies, Location and links). The sample
//   catalogue's fixed ids (018cc251-f400-7000-8000-00000000xxxx) are the same on every run and kept.
// - `<token>`: a paging token (`token=` in links and URLs), not numbered: it is sealed with a random
//   nonce, and whether a later link repeats an earlier token depends on timing (two runs of one build
//   differed there), so equality of tokens is not recorded. That a token works shows in the answer to
//   the request that follows it.
// - ETags: the version is kept ("3": versions are deterministic); the digest some representations'
//   ETags add ("1.qApeam1fstQB": a review, or fields/expand/include) becomes `<tagN>`
//   ("3.<tag2>"): with expand it covers embedded records' ids and times, so it varies between runs
//   (the digests of the sample catalogue alone were equal in both builds); any other form is `<etagN>`.
// - `<datetime>`: an ISO 8601 date-time (createdAt, updatedAt: the clock). Plain dates (born) are data, kept.
// - `<http-date>`: an IMF-fixdate (Last-Modified, and any in a body): the clock.
// - `ratelimit`'s `t=` (seconds left in the window: the clock); `r=` (requests left) is kept, as the
//   run is far shorter than the window and the count is the same on both sides.
// - `content-length` of a compressed answer: the compressed size of random ids varies.
// Nothing else in the answers was found to vary between two runs of one build (check: record twice
// against one build and diff).
import http from 'node:http'
import { writeFileSync } from 'node:fs'
import { gunzipSync, brotliDecompressSync, inflateSync } from 'node:zlib'

const [baseUrl, outFile] = process.argv.slice(2)
if (baseUrl === undefined || outFile === undefined) {
  process.stderr.write('usage: node scripts/record-answers.mjs <baseUrl, e.g. http://127.0.0.1:3000> <out.jsonl>\n')
  process.exit(2)
}

// The demo's default credentials (demo-service.md, API_TOKENS and API_KEYS).
const callers = {
  alice: { authorization: 'Bearer alice-token' },
  bob: { authorization: 'Bearer bob-token' },
  admin: { authorization: 'Bearer admin-token' },
  dev: { authorization: 'Bearer dev-token' },
  read: { authorization: 'Bearer read-token' },
  wrong: { authorization: 'Bearer wrong-token' },
  malformed: { authorization: 'Basic YWxpY2U6c2VjcmV0' },
  key: { 'x-api-key': 'dev-key' },
  badkey: { 'x-api-key': 'nope-key' },
  none: {}
}

// The sample catalogue (demo/seed.ts).
const a1 = '018cc251-f400-7000-8000-00000000a001'
const a2 = '018cc251-f400-7000-8000-00000000a002'
const a3 = '018cc251-f400-7000-8000-00000000a003'
const b1 = '018cc251-f400-7000-8000-00000000b001'
const b2 = '018cc251-f400-7000-8000-00000000b002'
const b3 = '018cc251-f400-7000-8000-00000000b003'
const b4 = '018cc251-f400-7000-8000-00000000b004'
const b5 = '018cc251-f400-7000-8000-00000000b005'
const c1 = '018cc251-f400-7000-8000-00000000c001'
const c3 = '018cc251-f400-7000-8000-00000000c003'
const c4 = '018cc251-f400-7000-8000-00000000c004'
const missing = '018cc251-f400-7000-8000-00000000ffff'

const steps = []
/** One request: method, path (with slots), caller, and options: h (headers), b (body: object → JSON, string → as is), ct, save. */
const req = (m, u, who = 'alice', o = {}) => steps.push({ m, u, who, ...o })
const get = (u, who, o) => req('GET', u, who, o)
const json = { 'content-type': 'application/json' }

// ---- Outside the API, documents, authentication
get('/health', 'none')
req('HEAD', '/health', 'none')
req('POST', '/health', 'none')
get('/nowhere', 'none')
get('/v1/nowhere', 'alice')
get('/v1/problems', 'none')
get('/v1/problems/not-found', 'none')
get('/v1/problems/no-such-problem', 'none')
get('/v1/openapi.json', 'none')
get('/v1/docs', 'none')
req('HEAD', '/v1/openapi.json', 'none')
for (const who of ['none', 'wrong', 'malformed', 'key', 'badkey', 'read', 'dev', 'alice', 'bob', 'admin']) get('/v1/authors', who)
get('/v1/authors', 'alice', { h: { 'x-api-key': 'dev-key' } })
get('/v1/authors', 'alice', { h: { origin: 'http://localhost:8080' } })
get('/v1/authors', 'alice', { h: { origin: 'http://evil.example' } })
req('OPTIONS', '/v1/authors', 'none', { h: { origin: 'http://localhost:8080', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, if-match' } })
req('OPTIONS', '/v1/books/' + b1, 'none', { h: { origin: 'http://evil.example', 'access-control-request-method': 'PATCH' } })
get('/v1/authors', 'alice', { h: { host: 'evil.example' } })

// ---- LIST on every collection, with the query parameters and their OData names
const collections = ['/v1/authors', '/v1/books', '/v1/reviews', `/v1/authors/${a2}/books`, `/v1/books/${b1}/reviews`]
const listQueries = ['', '?pageSize=1', '?pageSize=0', '?total=true', '?$count=true', '?offset=1&pageSize=2', '?$skip=1&$top=2',
  '?pageOffset=2&pageSize=1', '?page=2&pageSize=1', '?sort=-id', '?fields=id', '?total=false&pageSize=100']
for (const c of collections) for (const q of listQueries) get(c + q, 'alice')
for (const c of collections) req('HEAD', c + '?pageSize=2', 'alice')
for (const c of collections) req('OPTIONS', c, 'alice')
for (const c of collections) get(c, 'admin')

const books = [
  '?filter=year gt 1960', '?filter=year gt 1960 and rating ge 4', "?filter=title eq 'Arrow of God'", '?$filter=year lt 1960',
  "?filter=contains(title,'the')", "?filter=startswith(title,'T')", '?filter=year in (1958,1984)', '?filter=rating eq null',
  '?filter=not (available eq true)', "?filter=author/country eq 'NG'", '?author.country=IT', '?year=1958', '?available=true&pageSize=3',
  `?authorId=${a3}`, `?filter=authorId eq ${a2}`, '?filter=reviews/rating eq 5', '?sort=year', '?sort=-rating,title', '?$orderby=year desc,title',
  '?$orderby=title', '?fields=title,year', '?$select=year', '?expand=author', '?$expand=author', '?include=author', '?expand=reviews&include=author',
  '?expand=author&fields=title', '?search=arrow', '?$search=things OR cities', '?search="fall apart"', '?search=NOT arrow',
  '?apply=aggregate($count as n)', '?apply=groupby((authorId),aggregate($count as n,rating with average as avgRating))',
  '?$apply=groupby((author/country),aggregate(year with max as latest))&sort=-latest', '?apply=filter(year gt 1960)/aggregate(rating with sum as s)',
  '?total=estimated', '?sort=title&pageSize=2&total=true', '?filter=year gt 1900&sort=-year&fields=id,year&pageSize=2'
]
for (const q of books) get('/v1/books' + q, 'alice')
const authors = ["?filter=country eq 'NZ'", '?country=NG', '?sort=-born', '?sort=name&fields=name', '?expand=books', '?include=books', '?expand=books&fields=name',
  '?filter=books/year gt 1980', '?search=calvino', '?born=1930-11-16', '?filter=born lt 1940-01-01', '?apply=groupby((country),aggregate($count as n))']
for (const q of authors) get('/v1/authors' + q, 'alice')
const reviews = ['?sort=-rating', '?filter=rating ge 4', '?expand=book', '?include=book', '?fields=rating,text', '?search=world', '?private=true', '?ownerId=dave']
for (const q of reviews) { get('/v1/reviews' + q, 'alice'); get('/v1/reviews' + q, 'admin') }
get('/v1/reviews?fields=moderatorNote', 'admin')
get('/v1/reviews?sort=moderatorNote', 'admin')
get('/v1/reviews?filter=moderatorNote eq null', 'admin')
get('/v1/reviews?total=true', 'bob')
get('/v1/reviews?total=true', 'admin')
get(`/v1/books/${b4}/reviews`, 'bob')
get(`/v1/books/${b4}/reviews`, 'admin')
get('/v1/books?expand=reviews&fields=title', 'bob')
get('/v1/books?expand=reviews&fields=title', 'admin')
get('/v1/books?filter=reviews/rating eq 3', 'bob')
get('/v1/books?filter=reviews/rating eq 3', 'admin')

// ---- Paging by tokens: next, prev, last, a tampered or foreign token
get('/v1/books?pageSize=2&sort=title', 'alice', { save: { links: 'P1' } })
get('{next:P1}', 'alice', { save: { links: 'P2' } })
get('{next:P2}', 'alice', { save: { links: 'P3' } })
get('{prev:P3}', 'alice')
get('{last:P1}', 'alice')
get('{next:P1}', 'bob')
get('{next:P1}&sort=year', 'alice')
get('/v1/books?pageSize=2&token=AAAAbogus', 'alice')
get('/v1/books?pageSize=2&token=', 'alice')
get('/v1/authors?pageSize=1&total=true', 'alice', { save: { links: 'P4' } })
get('{next:P4}', 'alice')
get('{next:P4}&offset=1', 'alice')
get(`/v1/authors/${a2}/books?pageSize=1`, 'alice', { save: { links: 'P5' } })
get('{next:P5}', 'alice')

// ---- Bad query parameters: one at a time, then several together (the order of invalidParams)
const badQueries = ['?pageSize=x', '?pageSize=-1', '?pageSize=101', '?offset=-1', '?offset=a', '?pageOffset=0', '?page=0', '?offset=1&pageOffset=2',
  '?token=x&offset=1', '?sort=nope', '?sort=', '?sort=--year', '?fields=nope', '?fields=', '?expand=nope', '?include=nope', '?total=maybe', '?$count=yes',
  '?filter=year gt', '?filter=nope eq 1', "?filter=year eq 'x'", '?filter=(year gt 1', '?nope=1', '?year=abc', '?filter=a&$filter=b', '?pageSize=1&$top=1',
  '?sort=year&$orderby=year', '?$orderby=year sideways', '?apply=aggregate(title with sum as s)', '?apply=bogus(', '?apply=aggregate($count as n)&fields=id',
  '?apply=aggregate($count as n)&expand=author', '?search=', '?search=(unclosed', '?pageSize=1&pageSize=2', '?fields=id&fields=title',
  '?pageSize=x&sort=nope&fields=nope', '?fields=nope&sort=nope&pageSize=x&offset=-1&expand=nope&total=maybe',
  '?total=maybe&expand=nope&offset=-1&pageSize=x&sort=nope&fields=nope&filter=year gt&nope=1',
  '?$top=x&$skip=-1&$orderby=nope&$select=nope&$count=maybe&$expand=nope&$filter=bad bad',
  '?include=nope&page=0&pageOffset=0&token=x', '?filter=nope eq 1&sort=nope', '?year=abc&pageSize=x']
for (const q of badQueries) get('/v1/books' + q, 'alice')
for (const q of ['?fields=moderatorNote', '?sort=moderatorNote', '?filter=moderatorNote eq null', '?moderatorNote=x', '?apply=groupby((moderatorNote))',
  '?sort=moderatorNote&fields=moderatorNote&pageSize=x']) get('/v1/reviews' + q, 'bob')
get(`/v1/authors/${a1}/books?sort=nope&pageSize=x`, 'alice')
get(`/v1/books/${b1}?fields=nope`, 'alice')
get(`/v1/books/${b1}?sort=title`, 'alice')
get(`/v1/books/${b1}?expand=nope&fields=nope`, 'alice')

// ---- RETRIEVE, HEAD, OPTIONS of items; 304 and conditional reads
for (const [c, id] of [['authors', a1], ['books', b1], ['reviews', c1]]) {
  get(`/v1/${c}/${id}`, 'alice', { save: { etag: `seed-${c}` } })
  req('HEAD', `/v1/${c}/${id}`, 'alice')
  req('OPTIONS', `/v1/${c}/${id}`, 'alice')
  get(`/v1/${c}/${id}`, 'alice', { h: { 'if-none-match': `{etag:seed-${c}}` } })
  req('HEAD', `/v1/${c}/${id}`, 'alice', { h: { 'if-none-match': `{etag:seed-${c}}` } })
  get(`/v1/${c}/${id}`, 'alice', { h: { 'if-none-match': '"999"' } })
  get(`/v1/${c}/${id}`, 'alice', { h: { 'if-none-match': '*' } })
  get(`/v1/${c}/${id}`, 'alice', { h: { 'if-modified-since': 'Sat, 01 Jan 2000 00:00:00 GMT' } })
  get(`/v1/${c}/${missing}`, 'alice')
  req('HEAD', `/v1/${c}/${missing}`, 'alice')
  req('OPTIONS', `/v1/${c}/${missing}`, 'alice')
  get(`/v1/${c}/not-a-uuid`, 'alice')
}
get(`/v1/books/${b1}?fields=title`, 'alice')
get(`/v1/books/${b1}?expand=author`, 'alice')
get(`/v1/books/${b1}?expand=author,reviews`, 'alice')
get(`/v1/books/${b1}?include=author`, 'alice')
get(`/v1/authors/${a3}?expand=books&fields=name`, 'alice')
get(`/v1/reviews/${c4}`, 'bob')
req('HEAD', `/v1/reviews/${c4}`, 'bob')
req('OPTIONS', `/v1/reviews/${c4}`, 'bob')
get(`/v1/reviews/${c4}`, 'admin')
get(`/v1/reviews/${c4}?fields=moderatorNote`, 'bob')
get(`/v1/reviews/${c3}?fields=moderatorNote`, 'admin')

// ---- Media types: XML, CSV, NDJSON, form bodies, compression, unacceptable types
for (const accept of ['application/xml', 'text/csv', 'application/x-ndjson', 'application/json;q=0.5, application/xml', 'text/html', 'image/png', '*/*', 'application/*']) {
  get('/v1/authors?sort=name', 'alice', { h: { accept } })
}
get(`/v1/books/${b2}`, 'alice', { h: { accept: 'application/xml' } })
get(`/v1/books/${b2}`, 'alice', { h: { accept: 'text/csv' } })
get('/v1/books?fields=title&sort=title', 'alice', { h: { accept: 'text/csv' } })
get('/v1/books?nope=1', 'alice', { h: { accept: 'application/xml' } })
get('/v1/books?pageSize=2', 'alice', { h: { 'accept-encoding': 'gzip' } })
get('/v1/books?pageSize=2', 'alice', { h: { 'accept-encoding': 'br' } })
get('/v1/openapi.json', 'none', { h: { 'accept-encoding': 'gzip' } })

// ---- Writes on authors: CREATE (JSON, XML, form, multipart), Prefer, Idempotency-Key, bad bodies
req('POST', '/v1/authors', 'alice', { b: { name: 'Janet Frame', born: '1924-08-28', country: 'NZ' }, save: { id: 'A1', etag: 'A1' } })
req('POST', '/v1/authors', 'alice', { b: { name: 'Minimal One' }, h: { prefer: 'return=minimal' }, save: { id: 'A2' } })
req('POST', '/v1/authors', 'alice', { b: { name: 'Represented' }, h: { prefer: 'return=representation' }, save: { id: 'A3' } })
req('POST', '/v1/authors', 'alice', { b: '<author><name>Xml Author</name><country>FR</country></author>', ct: 'application/xml', save: { id: 'A4' } })
req('POST', '/v1/authors', 'alice', { b: 'name=Form+Author&country=DE', ct: 'application/x-www-form-urlencoded', save: { id: 'A5' } })
req('POST', '/v1/authors', 'alice', { b: '--XyZ\r\nContent-Disposition: form-data; name="name"\r\n\r\nMultipart Author\r\n--XyZ--\r\n', ct: 'multipart/form-data; boundary=XyZ', save: { id: 'A6' } })
req('POST', '/v1/authors', 'alice', { b: { name: 'Keyed' }, h: { 'idempotency-key': '"key-author-1"' }, save: { id: 'A7' } })
req('POST', '/v1/authors', 'alice', { b: { name: 'Keyed' }, h: { 'idempotency-key': '"key-author-1"' } })
req('POST', '/v1/authors', 'alice', { b: { name: 'Keyed differently' }, h: { 'idempotency-key': '"key-author-1"' } })
req('POST', '/v1/authors', 'bob', { b: { name: 'Keyed' }, h: { 'idempotency-key': '"key-author-1"' }, save: { id: 'A8' } })
req('POST', '/v1/authors', 'alice', { b: { name: 'Bare key' }, h: { 'idempotency-key': 'bare-key-2' }, save: { id: 'A9' } })
req('POST', '/v1/authors', 'alice', { b: { name: 'Bare key' }, h: { 'idempotency-key': 'bare-key-2', prefer: 'return=minimal' } })
req('POST', '/v1/authors', 'alice', { b: { name: 'Empty key' }, h: { 'idempotency-key': '""' } })
req('POST', '/v1/authors', 'alice', { b: { name: 'Long key' }, h: { 'idempotency-key': '"' + 'k'.repeat(300) + '"' } })
req('POST', '/v1/authors', 'alice', { b: { name: 'Bad key' }, h: { 'idempotency-key': '"unterminated' } })
req('POST', '/v1/authors', 'alice', { b: { name: 'Prefer odd' }, h: { prefer: 'return=nonsense' }, save: { id: 'A10' } })
const badAuthors = [{}, { name: '' }, { name: 'x'.repeat(201) }, { name: 7 }, { name: 'A', born: 'yesterday' }, { name: 'A', country: 'New Zealand' },
  { name: 'A', id: missing }, { name: 'A', extra: 1 }, { born: 1, country: 2, extra: true }, [], 'just a string', null]
for (const b of badAuthors) req('POST', '/v1/authors', 'alice', { b: JSON.stringify(b), ct: 'application/json' })
req('POST', '/v1/authors', 'alice', { b: '{"name": "broken', ct: 'application/json' })
req('POST', '/v1/authors', 'alice', { b: '', ct: 'application/json' })
req('POST', '/v1/authors', 'alice', { b: '{"name":"No type"}', ct: '' })
req('POST', '/v1/authors', 'alice', { b: '{"name":"Text"}', ct: 'text/plain' })
req('POST', '/v1/authors', 'alice', { b: '<author><name>broken', ct: 'application/xml' })
req('POST', '/v1/authors', 'alice', { b: 'name=', ct: 'application/x-www-form-urlencoded' })
req('POST', '/v1/authors', 'read', { b: { name: 'Reader' } })
req('POST', '/v1/authors', 'none', { b: { name: 'Nobody' } })
req('POST', '/v1/authors', 'wrong', { b: { name: 'Wrong' } })
req('POST', '/v1/authors', 'key', { b: { name: 'By key' }, save: { id: 'A11' } })
req('POST', `/v1/authors/${a1}`, 'alice', { b: { name: 'Post on item' } })
req('PUT', '/v1/authors', 'alice', { b: { name: 'Put on collection' } })
req('DELETE', '/v1/authors', 'alice')
get('/v1/authors/{A1}', 'alice')
get('/v1/authors?sort=name&total=true', 'alice')

// ---- REPLACE and MODIFY with and without If-Match, Prefer; 412; bad bodies
req('PUT', '/v1/authors/{A1}', 'alice', { b: { name: 'Janet Frame', born: '1924-08-28', country: 'NZ' }, save: { etag: 'A1' } })
req('PUT', '/v1/authors/{A1}', 'alice', { b: { name: 'Janet P. Frame' }, h: { 'if-match': '{etag:A1}' }, save: { etag: 'A1' } })
req('PUT', '/v1/authors/{A1}', 'alice', { b: { name: 'Stale' }, h: { 'if-match': '"1"' } })
req('PUT', '/v1/authors/{A1}', 'alice', { b: { name: 'Star' }, h: { 'if-match': '*' }, save: { etag: 'A1' } })
req('PUT', '/v1/authors/{A1}', 'alice', { b: { name: 'Weak' }, h: { 'if-match': 'W/"3"' } })
req('PUT', '/v1/authors/{A1}', 'alice', { b: { name: 'Garbage' }, h: { 'if-match': 'garbage' } })
req('PUT', '/v1/authors/{A1}', 'alice', { b: { name: 'Minimal put' }, h: { prefer: 'return=minimal' }, save: { etag: 'A1' } })
req('PUT', '/v1/authors/{A1}', 'alice', { b: { name: 'Unmodified' }, h: { 'if-unmodified-since': 'Sat, 01 Jan 2000 00:00:00 GMT' } })
req('PUT', '/v1/authors/{A1}', 'alice', { b: { country: 'NZ' } })
req('PUT', '/v1/authors/{A1}', 'alice', { b: { name: 'With id', id: '{A1}' } })
req('PUT', '/v1/authors/{A1}', 'alice', { b: { name: 'Other id', id: a2 } })
req('PUT', '/v1/authors/{A1}', 'read', { b: { name: 'Reader' } })
req('PUT', `/v1/authors/${missing}`, 'alice', { b: { name: 'Missing' } })
req('PUT', '/v1/authors/{A2}', 'alice', { b: '<author><name>Xml Replaced</name></author>', ct: 'application/xml' })
req('PUT', '/v1/authors/{A2}', 'alice', { b: 'name=Form+Replaced', ct: 'application/x-www-form-urlencoded' })
req('PUT', '/v1/authors/{A2}', 'alice', { b: { name: 'Idem' }, h: { 'idempotency-key': '"put-key"' } })
req('PATCH', '/v1/authors/{A1}', 'alice', { b: { country: 'AU' }, save: { etag: 'A1' } })
req('PATCH', '/v1/authors/{A1}', 'alice', { b: { country: null }, ct: 'application/merge-patch+json', h: { 'if-match': '{etag:A1}' }, save: { etag: 'A1' } })
req('PATCH', '/v1/authors/{A1}', 'alice', { b: { born: '1925-01-01' }, h: { 'if-match': '"1"' } })
req('PATCH', '/v1/authors/{A1}', 'alice', { b: { name: 'Minimal patch' }, h: { prefer: 'return=minimal' }, save: { etag: 'A1' } })
req('PATCH', '/v1/authors/{A1}', 'alice', { b: { name: 'Keyed patch' }, h: { 'idempotency-key': '"patch-key"' }, save: { etag: 'A1' } })
req('PATCH', '/v1/authors/{A1}', 'alice', { b: { name: 'Keyed patch' }, h: { 'idempotency-key': '"patch-key"' } })
req('PATCH', '/v1/authors/{A1}', 'alice', { b: { name: 'Keyed patch 2' }, h: { 'idempotency-key': '"patch-key"' } })
req('PATCH', '/v1/authors/{A1}', 'alice', { b: {} })
req('PATCH', '/v1/authors/{A1}', 'alice', { b: { name: null } })
req('PATCH', '/v1/authors/{A1}', 'alice', { b: { name: '', born: 'x', extra: 1 } })
req('PATCH', '/v1/authors/{A1}', 'alice', { b: { id: missing } })
req('PATCH', '/v1/authors/{A1}', 'alice', { b: '[1,2]', ct: 'application/json' })
req('PATCH', '/v1/authors/{A1}', 'alice', { b: 'country=IE', ct: 'application/x-www-form-urlencoded', save: { etag: 'A1' } })
req('PATCH', '/v1/authors/{A1}', 'alice', { b: '[{"op":"replace","path":"/name","value":"J"}]', ct: 'application/json-patch+json' })
req('PATCH', `/v1/authors/${missing}`, 'alice', { b: { name: 'Missing' } })
req('PUT', '/v1/authors/{A1}', 'alice', { b: { name: 'Create only' }, h: { 'if-none-match': '*' } })
req('PATCH', '/v1/authors/{A1}', 'alice', { b: { name: 'Not this version' }, h: { 'if-none-match': '{etag:A1}' } })
req('PATCH', '/v1/authors/{A1}', 'alice', { b: { name: 'Both' }, h: { 'if-match': '{etag:A1}', 'if-unmodified-since': 'Sat, 01 Jan 2000 00:00:00 GMT' } })
req('POST', `/v1/authors/${a1}/books`, 'alice', { b: { title: 'Nested create' } })
req('DELETE', `/v1/books/${b1}/reviews`, 'alice')
get('/v1/authors', 'alice', { h: { 'if-none-match': '*' } })
req('HEAD', '/v1/authors', 'none')
req('OPTIONS', '/v1/authors', 'read')
req('OPTIONS', '/v1/authors', 'none')
req('PATCH', '/v1/authors/{A1}', 'read', { b: { name: 'Reader' } })
get('/v1/authors/{A1}', 'alice', { save: { etag: 'A1' } })
get('/v1/authors/{A1}', 'alice', { h: { 'if-none-match': '{etag:A1}' } })

// ---- Writes on books: relations, 422, derived values
req('POST', '/v1/books', 'alice', { b: { title: 'Owls Do Cry', authorId: '{A1}', year: 1957, rating: 4 }, save: { id: 'B1', etag: 'B1' } })
req('POST', '/v1/books', 'alice', { b: { title: 'Faces in the Water', authorId: '{A1}', year: 1961, available: false }, save: { id: 'B2', etag: 'B2' } })
req('POST', '/v1/books', 'alice', { b: { title: 'Orphan', authorId: missing } })
req('POST', '/v1/books', 'alice', { b: { title: 'No author' } })
req('POST', '/v1/books', 'alice', { b: { title: 'Bad rating', authorId: a1, rating: 6, year: 1.5, available: 'yes' } })
req('POST', '/v1/books', 'alice', { b: { title: 'Derived', authorId: a1, reviewCount: 3 } })
req('POST', '/v1/books', 'alice', { b: '<book><title>Xml Book</title><authorId>{A1}</authorId><year>1970</year><available>true</available></book>', ct: 'application/xml', save: { id: 'B3' } })
req('POST', '/v1/books', 'alice', { b: 'title=Form+Book&authorId={A1}&year=1980&rating=3.5', ct: 'application/x-www-form-urlencoded', save: { id: 'B4' } })
get('/v1/authors/{A1}/books', 'alice')
get('/v1/authors/{A1}/books?sort=-year&fields=title&total=true', 'alice')
get('/v1/authors/{A1}?expand=books', 'alice')
get('/v1/books?filter=authorId eq {A1}&expand=author', 'alice')
req('PATCH', '/v1/books/{B1}', 'alice', { b: { authorId: missing } })
req('PATCH', '/v1/books/{B1}', 'alice', { b: { rating: 4.5 }, h: { 'if-match': '{etag:B1}' }, save: { etag: 'B1' } })
req('PATCH', '/v1/books/{B1}', 'alice', { b: { averageRating: 1 } })
req('PUT', '/v1/books/{B4}', 'alice', { b: { title: 'Form Book Replaced', authorId: a2 } })
req('DELETE', '/v1/authors/{A1}', 'alice')

// ---- Reviews: ownership, visibility, business rules, restricted field
req('POST', '/v1/reviews', 'alice', { b: { bookId: '{B1}', rating: 5, text: 'Raw.' }, save: { id: 'R1', etag: 'R1' } })
req('POST', '/v1/reviews', 'alice', { b: { bookId: '{B1}', rating: 4 } })
req('POST', '/v1/reviews', 'bob', { b: { bookId: '{B1}', rating: 2, private: true }, save: { id: 'R2', etag: 'R2' } })
req('POST', '/v1/reviews', 'alice', { b: { bookId: '{B2}', rating: 3 } })
req('POST', '/v1/reviews', 'alice', { b: { bookId: missing, rating: 3 } })
req('POST', '/v1/reviews', 'alice', { b: { bookId: b3, rating: 0 } })
req('POST', '/v1/reviews', 'alice', { b: { bookId: b3, rating: 3, ownerId: 'mallory' } })
req('POST', '/v1/reviews', 'alice', { b: { bookId: b3, rating: 3, createdAt: '2020-01-01T00:00:00Z' } })
req('POST', '/v1/reviews', 'alice', { b: { bookId: b3, rating: 3, moderatorNote: 'sneaky' } })
req('POST', '/v1/reviews', 'admin', { b: { bookId: b3, rating: 4, moderatorNote: 'checked' }, save: { id: 'R3' } })
req('POST', '/v1/reviews', 'key', { b: { bookId: b5, rating: 4 }, save: { id: 'R4' } })
req('POST', '/v1/reviews', 'alice', { b: { bookId: b5, rating: 2, text: 'x'.repeat(2001) } })
get('/v1/books/{B1}', 'alice')
get('/v1/books/{B1}/reviews', 'alice')
get('/v1/books/{B1}/reviews', 'bob')
get('/v1/books/{B1}/reviews?total=true', 'admin')
get('/v1/reviews/{R2}', 'alice')
get('/v1/reviews/{R2}', 'bob')
get('/v1/reviews/{R3}', 'alice')
get('/v1/reviews/{R3}', 'admin')
req('PATCH', '/v1/reviews/{R1}', 'bob', { b: { rating: 1 } })
req('PATCH', '/v1/reviews/{R2}', 'alice', { b: { rating: 1 } })
req('PATCH', '/v1/reviews/{R1}', 'alice', { b: { rating: 4 }, h: { 'if-match': '{etag:R1}' }, save: { etag: 'R1' } })
req('PATCH', '/v1/reviews/{R1}', 'alice', { b: { ownerId: 'bob' } })
req('PATCH', '/v1/reviews/{R1}', 'alice', { b: { updatedAt: '2020-01-01T00:00:00Z' } })
req('PATCH', '/v1/reviews/{R1}', 'alice', { b: { moderatorNote: 'x' } })
req('PATCH', '/v1/reviews/{R1}', 'admin', { b: { moderatorNote: 'fine' }, save: { etag: 'R1' } })
req('PATCH', '/v1/reviews/{R1}', 'alice', { b: { bookId: '{B2}' } })
req('PATCH', '/v1/reviews/{R1}', 'alice', { b: { bookId: b2 }, save: { etag: 'R1' } })
req('PUT', '/v1/reviews/{R2}', 'bob', { b: { bookId: '{B1}', rating: 3, private: false }, save: { etag: 'R2' } })
req('PUT', '/v1/reviews/{R2}', 'alice', { b: { bookId: '{B1}', rating: 3 } })
req('PUT', `/v1/reviews/${c4}`, 'bob', { b: { bookId: b4, rating: 3 } })
req('DELETE', `/v1/reviews/${c4}`, 'bob')
req('DELETE', `/v1/reviews/${c1}`, 'bob')
get('/v1/books/{B1}', 'alice')
get(`/v1/books/${b2}`, 'alice')
get('/v1/reviews?sort=-rating,id&fields=rating', 'alice')
get('/v1/reviews?sort=-rating,id&fields=rating,moderatorNote', 'admin')
get('/v1/books?apply=groupby((available),aggregate($count as n,reviewCount with sum as r))', 'alice')
get('/v1/reviews?apply=aggregate($count as n)', 'bob')
get('/v1/reviews?apply=aggregate($count as n)', 'admin')

// ---- DELETE, with and without If-Match; 409 for an author with books
req('DELETE', '/v1/reviews/{R2}', 'bob', { h: { 'if-match': '"1"' } })
req('DELETE', '/v1/reviews/{R2}', 'bob', { h: { 'if-match': '{etag:R2}' } })
req('DELETE', '/v1/reviews/{R2}', 'bob')
req('DELETE', '/v1/books/{B3}', 'read')
req('DELETE', '/v1/books/{B3}', 'none')
req('DELETE', '/v1/books/{B3}', 'alice', { h: { 'if-match': 'nonsense' } })
req('DELETE', '/v1/books/{B3}', 'alice', { h: { 'if-match': '*' } })
get('/v1/books/{B3}', 'alice')
req('DELETE', '/v1/books/{B3}', 'alice')
req('DELETE', '/v1/books/{B4}', 'alice', { h: { 'idempotency-key': '"del-key"' } })
req('DELETE', `/v1/authors/${a3}`, 'alice')
req('DELETE', '/v1/authors/{A6}', 'alice')
req('DELETE', '/v1/authors/{A6}', 'alice')
req('DELETE', '/v1/authors/{A5}', 'alice', { h: { prefer: 'return=minimal' } })
req('DELETE', '/v1/authors/{A4}', 'alice', { b: { name: 'body on delete' } })
req('DELETE', '/v1/authors/not-a-uuid', 'alice')

// ---- The batch
req('POST', '/v1/batch', 'alice', {
  b: {
    operations: [
      { op: 'create', resource: 'authors', lid: 'a1', data: { name: 'Batch Author' } },
      { op: 'create', resource: 'books', lid: 'b1', data: { title: 'Batch Book', authorId: { lid: 'a1' } } },
      { op: 'modify', resource: 'books', id: { lid: 'b1' }, ifMatch: '"1"', data: { year: 2001 } },
      { op: 'replace', resource: 'authors', id: '{A3}', data: { name: 'Replaced in batch' } },
      { op: 'create', resource: 'reviews', lid: 'r1', data: { bookId: { lid: 'b1' }, rating: 5 } },
      { op: 'delete', resource: 'authors', id: '{A9}' }
    ]
  }
})
get('/v1/authors?filter=name eq \'Batch Author\'&expand=books', 'alice')
req('POST', '/v1/batch', 'alice', {
  b: {
    operations: [
      { op: 'create', resource: 'authors', data: { name: 'Rolled back' } },
      { op: 'modify', resource: 'books', id: missing, data: { year: 1 } }
    ]
  }
})
get('/v1/authors?filter=name eq \'Rolled back\'', 'alice')
req('POST', '/v1/batch', 'alice', { b: { operations: [{ op: 'create', resource: 'authors', data: { name: '' } }, { op: 'create', resource: 'books', data: { title: 'x', authorId: { lid: 'nope' } } }] } })
req('POST', '/v1/batch', 'alice', { b: { operations: [{ op: 'modify', resource: 'authors', id: '{A3}', ifMatch: '"99"', data: { name: 'x' } }] } })
req('POST', '/v1/batch', 'alice', { b: { operations: [{ op: 'delete', resource: 'authors', id: a2 }] } })
req('POST', '/v1/batch', 'alice', { b: { operations: [{ op: 'modify', resource: 'reviews', id: c3, data: { rating: 1 } }] } })
req('POST', '/v1/batch', 'alice', { b: { operations: [{ op: 'create', resource: 'reviews', data: { bookId: '{B2}', rating: 1 } }] } })
req('POST', '/v1/batch', 'alice', { b: { operations: [{ op: 'fly', resource: 'authors' }] } })
req('POST', '/v1/batch', 'alice', { b: { operations: [{ op: 'create', resource: 'dragons', data: {} }] } })
req('POST', '/v1/batch', 'alice', { b: { operations: [] } })
req('POST', '/v1/batch', 'alice', { b: { operations: Array.from({ length: 101 }, (_, i) => ({ op: 'create', resource: 'authors', data: { name: `n${i}` } })) } })
req('POST', '/v1/batch', 'alice', { b: { nothing: true } })
req('POST', '/v1/batch', 'alice', { b: 'not json', ct: 'application/json' })
req('POST', '/v1/batch', 'read', { b: { operations: [{ op: 'create', resource: 'authors', data: { name: 'R' } }] } })
req('POST', '/v1/batch', 'none', { b: { operations: [{ op: 'create', resource: 'authors', data: { name: 'N' } }] } })
req('POST', '/v1/batch', 'alice', { b: { operations: [{ op: 'create', resource: 'authors', data: { name: 'Keyed batch' } }] }, h: { 'idempotency-key': '"batch-key"' } })
req('POST', '/v1/batch', 'alice', { b: { operations: [{ op: 'create', resource: 'authors', data: { name: 'Keyed batch' } }] }, h: { 'idempotency-key': '"batch-key"' } })
req('POST', '/v1/batch', 'alice', { b: { operations: [{ op: 'create', resource: 'authors', data: { name: 'Other batch' } }] }, h: { 'idempotency-key': '"batch-key"' } })
req('GET', '/v1/batch', 'alice')

// ---- Wrong methods and odd requests
req('PATCH', '/v1/books', 'alice', { b: { title: 'x' } })
req('TRACE', '/v1/books', 'alice')
req('DELETE', '/v1/openapi.json', 'alice')
get('/v1/books/', 'alice')
get('/v1//books', 'alice')
get('/v1/books?filter=' + 'year gt 1 and '.repeat(60) + 'year gt 1', 'alice')
get('/v1/books?' + 'x'.repeat(3000) + '=1', 'alice')
get('/v1/books?pageSize=%ZZ', 'alice')
get('/v1/books/%E0%A4%A', 'alice')

// ---- The final state, as each caller sees it
for (const c of ['/v1/authors?sort=name&pageSize=100&total=true', '/v1/books?sort=title&pageSize=100&total=true&expand=author', '/v1/reviews?sort=rating,id&pageSize=100&total=true']) {
  for (const who of ['alice', 'bob', 'admin', 'read']) get(c, who)
}

// ---------------------------------------------------------------------------------------------
// Running and recording

const slots = new Map()
const fill = text => text.replace(/\{((?:etag|next|prev|last|first):)?([A-Za-z0-9-]+)\}/g, (all, kind, name) => slots.get((kind ?? '') + name) ?? all)

const seedId = /^018cc251-f400-7000-8000-00000000[0-9a-f]{4}$/
const maps = { id: new Map(), etag: new Map(), tag: new Map() }
const place = (kind, value) => {
  const map = maps[kind]
  if (!map.has(value)) map.set(value, `<${kind}${map.size + 1}>`)
  return map.get(value)
}
const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi
const isoDateTime = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})/g
const httpDate = /(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT/g
// A token's value in a URL or link: up to the next &, quote or space. The malformed tokens this
// sequence sends itself (empty, x, AAAAbogus) are kept.
const tokenParam = /([?&](?:amp;)?token=)([^&"'<>\s]+)/g
const maskText = text => text
  .replace(tokenParam, (_, lead, value) => lead + (value === '' || value === 'AAAAbogus' || value === 'x' ? value : '<token>'))
  .replace(uuid, id => seedId.test(id) ? id : place('id', id.toLowerCase()))
  .replace(isoDateTime, '<datetime>')
  .replace(httpDate, '<http-date>')
// An ETag is "<version>" or "<version>.<digest of the representation>": the version is kept, the
// digest mapped (it covers embedded records' ids and times); anything else is mapped whole.
const maskEtag = value => {
  const parts = /^(W\/)?"(\d+)(?:\.([A-Za-z0-9_-]+))?"$/.exec(value)
  if (parts === null) return place('etag', value)
  return `${parts[1] ?? ''}"${parts[2]}${parts[3] === undefined ? '' : '.' + place('tag', parts[3])}"`
}

const dropped = new Set(['date', 'request-id', 'x-request-id', 'server-timing'])
function maskHeaders (headers, compressed) {
  return Object.keys(headers).filter(name => !dropped.has(name)).sort().map(name => {
    let value = Array.isArray(headers[name]) ? headers[name].join(', ') : String(headers[name])
    if (name === 'etag') value = maskEtag(value)
    else if (name === 'ratelimit') value = value.replace(/t=\d+/, 't=<n>')
    else if (name === 'content-length' && compressed) value = '<n>'
    else value = maskText(value)
    return [name, value]
  })
}

function decode (buffer, encoding) {
  if (encoding === 'gzip') return gunzipSync(buffer)
  if (encoding === 'br') return brotliDecompressSync(buffer)
  if (encoding === 'deflate') return inflateSync(buffer)
  return buffer
}

const base = new URL(baseUrl)
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
function send (method, path, headers, body) {
  return new Promise((resolve, reject) => {
    const request = http.request({ host: base.hostname, port: base.port, method, path, headers, agent }, response => {
      const chunks = []
      response.on('data', chunk => chunks.push(chunk))
      response.on('end', () => resolve({ status: response.statusCode, headers: response.headers, body: Buffer.concat(chunks) }))
      response.on('error', reject)
    })
    request.on('error', reject)
    request.end(body)
  })
}

/** Fills the slots an answer offers: the id of what it created, its ETag, its paging links. */
function save (what, answer, text) {
  if (what === undefined) return
  if (what.id !== undefined) {
    const location = answer.headers.location
    let id = location === undefined ? undefined : location.split('/').pop()
    if (id === undefined) try { id = Object.values(JSON.parse(text).data)[0].id } catch {}
    if (id !== undefined) slots.set(what.id, id)
  }
  if (what.etag !== undefined && answer.headers.etag !== undefined) slots.set('etag:' + what.etag, answer.headers.etag)
  if (what.links !== undefined) {
    try {
      for (const link of JSON.parse(text).links ?? []) slots.set(`${link.rel}:${what.links}`, link.href)
    } catch {}
  }
}

const lines = []
for (const [index, step] of steps.entries()) {
  const headers = { ...callers[step.who] }
  let body
  if (step.b !== undefined) {
    body = fill(typeof step.b === 'string' ? step.b : JSON.stringify(step.b))
    const type = step.ct ?? json['content-type']
    if (type !== '') headers['content-type'] = type
  }
  for (const [name, value] of Object.entries(step.h ?? {})) headers[name] = fill(value)
  // Only what may not stand in a request target is encoded (spaces, quotes, <>…): links the
  // server gave are sent as given, and malformed escapes (%ZZ) reach the server as written.
  const rawPath = fill(step.u).replace(/[^\x21-\x7e]|["<>\\^`{|}]/g, c => encodeURIComponent(c))
  const answer = await send(step.m, rawPath, headers, body)
  const compressed = answer.headers['content-encoding'] !== undefined
  const text = decode(answer.body, answer.headers['content-encoding']).toString('utf8')
  save(step.save, answer, text)
  lines.push(JSON.stringify({
    index,
    method: step.m,
    url: maskText(rawPath),
    request: { headers: Object.keys(headers).sort().map(name => [name, maskText(headers[name])]), body: body === undefined ? undefined : maskText(body) },
    status: answer.status,
    headers: maskHeaders(answer.headers, compressed),
    body: maskText(text)
  }))
}
agent.destroy()
writeFileSync(outFile, lines.join('\n') + '\n')
process.stdout.write(`${lines.length} requests recorded into ${outFile}\n`)
