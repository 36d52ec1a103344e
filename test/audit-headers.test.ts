// Audit headers (spec "Request headers", "Authentication" 5, "Limits"): each X-Audit-* at
// most 8 KB of strict base64, X-Audit-Consent a FHIR Consent, X-Authenticated_User free text of at
// most 8 KB; 400 naming the header otherwise; decoded values on request.audit and in the log line of each write.
import { Writable } from 'node:stream'
import t from 'tap'
import type { AuditValues } from '../lib/index.js'
import { buildDemoApp } from '../demo/app.js'
import { loadConfig } from '../demo/config.js'
import { buildApp, json } from './helpers/app.js'
import { auth, testAuth } from './helpers/auth.js'
import { buildSecureApp, seedOne } from './helpers/secure-app.js'

const b64 = (text: string) => Buffer.from(text).toString('base64')
const consent = { resourceType: 'Consent', status: 'active', scope: { text: 'treatment' } }
const device = JSON.stringify({ system: 'urn:ietf:rfc:3986', value: 'urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66' })
const valid = {
  'x-audit-consent': b64(JSON.stringify(consent)),
  'x-audit-device': b64(device),
  'x-audit-organisation': b64('https://org.example|4321'),
  'x-audit-user': b64('Ngā Tāngata|007'),
  'x-authenticated_user': 'billing-service'
}
const decoded: AuditValues = { consent: consent as AuditValues['consent'], device, organisation: 'https://org.example|4321', user: 'Ngā Tāngata|007', authenticatedUser: 'billing-service' }
const base64Headers = Object.keys(valid).filter(name => name.startsWith('x-audit-'))

function capture () {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write (chunk, _encoding, callback) {
      lines.push(JSON.parse(String(chunk)))
      callback()
    }
  })
  return { lines, stream }
}

t.test('valid audit headers are decoded onto request.audit', async t => {
  const seen: Array<AuditValues | null> = []
  const app = await buildSecureApp(t, { auth: testAuth({ authorize: ({ request }) => { seen.push(request.audit); return true } }) })
  t.equal((await app.inject({ url: '/v1/books', headers: { ...auth.read, ...valid } })).statusCode, 200)
  t.equal((await app.inject({ url: '/v1/books', headers: { ...auth.read, 'x-audit-user': valid['x-audit-user'] } })).statusCode, 200)
  t.equal((await app.inject({ url: '/v1/books', headers: auth.read })).statusCode, 200)
  t.same(seen, [decoded, { user: 'Ngā Tāngata|007' }, null])
})

t.test('each write with audit headers logs their decoded values; reads and plain writes do not', async t => {
  const { lines, stream } = capture()
  const app = await buildApp(t, { server: { logger: { stream, level: 'info' } } })
  const created = await app.inject({ method: 'POST', url: '/v1/authors', headers: { ...json, ...valid }, payload: { name: 'Patricia Grace' } })
  t.equal(created.statusCode, 201)
  await app.inject({ url: '/v1/authors', headers: valid })
  await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'Albert Wendt' } })
  const failed = await app.inject({ method: 'DELETE', url: '/v1/authors/missing', headers: { 'x-audit-user': valid['x-audit-user'] } })
  t.equal(failed.statusCode, 404)
  const audited = lines.filter(line => line.msg === 'audited write')
  t.same(audited.map(line => ({ audit: line.audit, statusCode: line.statusCode })), [
    { audit: decoded, statusCode: 201 },
    { audit: { user: 'Ngā Tāngata|007' }, statusCode: 404 }
  ])
  t.ok(audited.every(line => typeof line.reqId === 'string'), 'each line carries the request id')
})

t.test('an X-Audit-* header that is not strict base64 of UTF-8 is 400 naming it', async t => {
  const app = await buildApp(t)
  const bad = ['not base64!', 'QQ', 'QR==', 'QQ==\n', 'Q Q==', '/w==', 'QQ==QQ==', '=']
  for (const name of base64Headers) {
    for (const value of bad) {
      const res = await app.inject({ url: '/v1/books', headers: { [name]: value } })
      t.equal(res.statusCode, 400, `${name}: ${JSON.stringify(value)}`)
      t.match(res.headers['content-type'], /^application\/problem\+json/)
      t.match(res.json(), { type: '/v1/problems/header-invalid', invalidParams: [{ name: new RegExp(`^${name}$`, 'i'), reason: /base64/ }] })
    }
  }
})

t.test('X-Authenticated_User is free text, kept as sent: base64 is not asked of it', async t => {
  const seen: Array<string | undefined> = []
  const app = await buildSecureApp(t, { auth: testAuth({ authorize: ({ request }) => { seen.push(request.audit?.authenticatedUser); return true } }) })
  const texts = ['billing-service', 'not base64!', 'QQ', b64('billing-service'), 'Billing Service (EU) #2; v1.4', 's'.repeat(8192)]
  for (const text of texts) t.equal((await app.inject({ url: '/v1/books', headers: { ...auth.read, 'x-authenticated_user': text } })).statusCode, 200, text.slice(0, 40))
  t.same(seen, texts)
})

t.test('X-Authenticated_User longer than 8 KB, empty, or not visible ASCII is 400 naming it', async t => {
  const app = await buildApp(t)
  for (const text of ['s'.repeat(8193), '', 'Zoë', 'tab\there']) {
    const res = await app.inject({ url: '/v1/books', headers: { 'x-authenticated_user': text } })
    t.equal(res.statusCode, 400, JSON.stringify(text.slice(0, 20)))
    t.same(res.json().invalidParams, [{ name: 'X-Authenticated_User', reason: 'must be 1 to 8192 characters of visible ASCII text' }])
  }
})

t.test('each header may be 8 KB and no more', async t => {
  const app = await buildApp(t)
  const atLimit = b64('u'.repeat(6144))
  t.equal(atLimit.length, 8192)
  const ok = await app.inject({ url: '/v1/books', headers: { 'x-audit-device': atLimit } })
  t.equal(ok.statusCode, 200)
  const over = await app.inject({ url: '/v1/books', headers: { 'x-audit-device': b64('u'.repeat(6147)) } })
  t.equal(over.statusCode, 400)
  t.match(over.json().invalidParams, [{ name: 'X-Audit-Device', reason: 'must be at most 8192 characters of base64' }])
})

t.test('X-Audit-Consent must decode to a JSON object with resourceType "Consent"', async t => {
  const app = await buildApp(t)
  for (const text of ['not json', '[{"resourceType":"Consent"}]', '"Consent"', 'null', '{"resourceType":"Patient"}', '{}']) {
    const res = await app.inject({ url: '/v1/books', headers: { 'x-audit-consent': b64(text) } })
    t.equal(res.statusCode, 400, text)
    t.match(res.json().invalidParams, [{ name: 'X-Audit-Consent', reason: /Consent/ }])
  }
})

t.test('every bad header is named at once, and a repeated header is refused', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ url: '/v1/books', headers: { 'x-audit-user': 'bad!', 'x-authenticated_user': 'Zoë', 'x-audit-device': valid['x-audit-device'] } })
  t.equal(res.statusCode, 400)
  t.same(res.json().invalidParams.map((p: { name: string }) => p.name), ['X-Audit-User', 'X-Authenticated_User'])
  const withDate = await app.inject({ url: '/v1/books', headers: { 'x-audit-user': 'bad!', date: 'nope' } })
  t.same({ status: withDate.statusCode, names: withDate.json().invalidParams.map((p: { name: string }) => p.name) }, { status: 400, names: ['Date', 'X-Audit-User'] }, 'a bad Date with them')
  t.same((await app.inject({ url: '/v1/books', headers: { date: 'nope' } })).json().invalidParams, [{ name: 'Date', reason: 'must be an RFC 5322 date such as Sun, 06 Nov 1994 08:49:37 GMT' }])
  const twice = await app.inject({ url: '/v1/books', headers: { 'x-audit-device': [valid['x-audit-device'], valid['x-audit-device']] } })
  t.equal(twice.statusCode, 400)
  t.match(twice.json().invalidParams, [{ name: 'X-Audit-Device' }])
})

t.test('audit headers are checked after authentication and the media type, before the body', async t => {
  const app = await buildSecureApp(t)
  const { author } = await seedOne(app)
  t.equal((await app.inject({ url: '/v1/books', headers: { 'x-audit-user': 'bad!' } })).statusCode, 401)
  t.equal((await app.inject({ method: 'POST', url: '/v1/books', headers: { ...auth.write, 'content-type': 'text/plain', 'x-audit-user': 'bad!' }, payload: 'x' })).statusCode, 415)
  const res = await app.inject({ method: 'POST', url: '/v1/books', headers: { ...auth.writeJson, 'x-audit-user': 'bad!' }, payload: '{"broken' })
  t.equal(res.statusCode, 400)
  t.match(res.json().invalidParams, [{ name: 'X-Audit-User' }])
  const created = await app.inject({ method: 'POST', url: '/v1/books', headers: { ...auth.writeJson, ...valid }, payload: { title: 'Potiki', authorId: author.id } })
  t.equal(created.statusCode, 201)
})

t.test('the demo accepts all five audit headers at their 8 KB limit over a socket', async t => {
  const app = await buildDemoApp(loadConfig({ STORE: 'memory' }), { logger: false })
  t.teardown(() => app.close())
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  const big = b64('u'.repeat(6144))
  // {"resourceType":"Consent","note":""} is 36 bytes: 6144 bytes in all, 8192 in base64.
  const consentAtLimit = b64(JSON.stringify({ resourceType: 'Consent', note: 'n'.repeat(6108) }))
  const headers = { authorization: 'Bearer read-token', 'x-audit-consent': consentAtLimit, 'x-audit-device': big, 'x-audit-organisation': big, 'x-audit-user': big, 'x-authenticated_user': big }
  t.ok(Object.values(headers).slice(1).every(value => value.length === 8192))
  const res = await fetch(`${url}/v1/books`, { headers })
  t.equal(res.status, 200)
})
