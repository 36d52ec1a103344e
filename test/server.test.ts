// Over real sockets (CONTRIBUTING.md "Tests": only where inject cannot see): the plugin behind
// a listening server, then the built demo (`npm run build:demo`, `node dist/demo/server.js`)
// driven like curl: each operation, graceful SIGTERM with a request in flight, and one clear
// line and a non-zero exit for a bad setting.
import t from 'tap'
import { execFile, spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { request } from 'node:http'
import type { IncomingMessage } from 'node:http'
import { connect, createServer } from 'node:net'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { buildApp, json, seed } from './helpers/app.js'

// Building the demo and starting node processes takes longer than tap's default allows on a busy machine.
t.setTimeout(300_000)

const root = fileURLToPath(new URL('..', import.meta.url))
const demo = 'dist/demo/server.js'
const auth = { authorization: 'Bearer dev-token' }

/** A raw HTTP exchange, for what fetch hides: methods it refuses, HEAD bodies, socket reuse. */
function exchange (url: string, options: { method?: string, headers?: Record<string, string>, body?: string, agent?: import('node:http').Agent } = {}) {
  return new Promise<{ status: number, headers: IncomingMessage['headers'], body: string, reused: boolean }>((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers, agent: options.agent }, res => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', chunk => { body += chunk })
      res.on('end', () => resolve({ status: res.statusCode as number, headers: res.headers, body, reused: req.reusedSocket }))
    })
    req.on('error', reject)
    req.end(options.body)
  })
}

t.test('in process, over a socket', async t => {
  async function listening (t: Parameters<typeof buildApp>[0], overrides: Parameters<typeof buildApp>[1] = {}) {
    const app = await buildApp(t, overrides)
    const address = await app.listen({ host: '127.0.0.1', port: 0 })
    return { app, base: `${address}/v1` }
  }

  t.test('CREATE then RETRIEVE over one kept-alive connection', async t => {
    const { base } = await listening(t)
    const { Agent } = await import('node:http')
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    t.teardown(() => agent.destroy())
    const created = await exchange(`${base}/authors`, { method: 'POST', headers: { ...json }, body: JSON.stringify({ name: 'Over the wire' }), agent })
    t.equal(created.status, 201)
    const location = created.headers.location as string
    t.match(location, /^\/v1\/authors\/[0-9a-f-]{36}$/)
    const read = await exchange(`${base.slice(0, -3)}${location}`, { agent })
    t.same({ status: read.status, etag: read.headers.etag, keepAlive: read.headers.connection, reused: read.reused }, { status: 200, etag: '"1"', keepAlive: 'keep-alive', reused: true })
    t.same(JSON.parse(read.body), JSON.parse(created.body))
  })

  t.test('HEAD sends GET\'s Content-Length and no body on the wire', async t => {
    const { app, base } = await listening(t)
    const { books } = await seed(app)
    const get = await exchange(`${base}/books/${books[0].id}`)
    const head = await exchange(`${base}/books/${books[0].id}`, { method: 'HEAD' })
    t.same({ status: head.status, length: head.headers['content-length'], etag: head.headers.etag, body: head.body }, { status: 200, length: get.headers['content-length'], etag: get.headers.etag, body: '' })
  })

  t.test('a 304 carries the ETag and no body on the wire', async t => {
    const { app, base } = await listening(t)
    const { books } = await seed(app)
    const res = await exchange(`${base}/books/${books[0].id}`, { headers: { 'if-none-match': '"1"' } })
    t.same({ status: res.status, etag: res.headers.etag, body: res.body }, { status: 304, etag: '"1"', body: '' })
  })

  t.test('a non-standard method answers 405 with Allow on the wire', async t => {
    const { base } = await listening(t)
    const res = await exchange(`${base}/books`, { method: 'PROPFIND' })
    t.same({ status: res.status, allow: res.headers.allow, type: res.headers['content-type'] }, { status: 405, allow: 'GET, HEAD, POST, OPTIONS', type: 'application/problem+json; charset=utf-8' })
  })

  t.test('a body over bodyLimit answers a 413 problem on the wire', async t => {
    const { base } = await listening(t, { server: { bodyLimit: 100 } })
    const res = await exchange(`${base}/authors`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'x'.repeat(500) }) })
    t.same({ status: res.status, type: JSON.parse(res.body).type }, { status: 413, type: '/v1/problems/body-too-large' })
  })

  t.test('fetch reads a collection and an error as a browser client would', async t => {
    const { app, base } = await listening(t)
    await seed(app)
    const list = await fetch(`${base}/books?pageSize=2`)
    t.same({ status: list.status, type: list.headers.get('content-type'), count: (await list.json()).data.books.length }, { status: 200, type: 'application/json; charset=utf-8', count: 2 })
    const missing = await fetch(`${base}/books/none`, { headers: { accept: 'application/json' } })
    t.same({ status: missing.status, type: missing.headers.get('content-type') }, { status: 404, type: 'application/problem+json; charset=utf-8' })
  })
})

/** One line of the demo's JSON log. */
type LogLine = Record<string, unknown> & { msg?: string }

interface Demo {
  readonly child: ChildProcess
  readonly url: string
  /** Resolves with the first log line (past or future) the predicate accepts. */
  log (predicate: (line: LogLine) => boolean): Promise<LogLine>
  /** Resolves with the first plain (not JSON) line of stdout, past or future, the predicate accepts. */
  printed (predicate: (line: string) => boolean): Promise<string>
  /** Every line of stdout so far, in order. */
  readonly stdout: readonly string[]
  readonly exited: Promise<{ code: number | null, stderr: string }>
}

function runDemo (env: Record<string, string>) {
  const child = spawn(process.execPath, [demo], {
    cwd: root,
    // DATABASE_URL from the outer environment would turn STORE=memory into a config error.
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', STORE: 'memory', DATABASE_URL: '', DATABASE_READ_URL: '', NATS_URL: '', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', chunk => { stderr += chunk })
  const exited = new Promise<{ code: number | null, stderr: string }>(resolve => child.on('close', code => resolve({ code, stderr })))
  return { child, exited, stdout: createInterface({ input: child.stdout as NodeJS.ReadableStream }) }
}

async function startDemo (t: { teardown (fn: () => unknown): void }, env: Record<string, string> = {}): Promise<Demo> {
  const { child, exited, stdout } = runDemo(env)
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  // Log records are JSON lines; the welcome printed after them is plain text.
  type Line = { log: LogLine } | { plain: string }
  const lines: Line[] = []
  const waiting: Array<{ predicate: (line: Line) => boolean, resolve: (line: Line) => void }> = []
  stdout.on('line', text => {
    const line: Line = text.startsWith('{') ? { log: JSON.parse(text) as LogLine } : { plain: text }
    lines.push(line)
    for (const waiter of waiting.filter(w => w.predicate(line))) {
      waiting.splice(waiting.indexOf(waiter), 1)
      waiter.resolve(line)
    }
  })
  const find = (predicate: (line: Line) => boolean) => {
    const seen = lines.find(predicate)
    return seen !== undefined ? Promise.resolve(seen) : new Promise<Line>(resolve => waiting.push({ predicate, resolve }))
  }
  const log = (predicate: (line: LogLine) => boolean) => find(line => 'log' in line && predicate(line.log)).then(line => (line as { log: LogLine }).log)
  const printed = (predicate: (line: string) => boolean) => find(line => 'plain' in line && predicate(line.plain)).then(line => (line as { plain: string }).plain)
  const listening = await Promise.race([
    log(line => /^Server listening at /.test(line.msg ?? '')),
    exited.then(({ code, stderr }) => { throw new Error(`demo exited with ${code}: ${stderr}`) })
  ])
  return {
    child,
    url: (listening.msg as string).replace('Server listening at ', ''),
    log,
    printed,
    get stdout () { return lines.map(line => 'plain' in line ? line.plain : JSON.stringify(line.log)) },
    exited
  }
}

t.test('the built demo', async t => {
  type Exit = Promise<{ code: number | null, stderr: string }>
  let failing: Record<'STORE' | 'PORT' | 'API_TOKENS' | 'inUse', Exit>
  t.before(async () => {
    // `npm run build:demo` is `tsc -p tsconfig.demo.json`. Type errors elsewhere in a shared tree do
    // not stop tsc from emitting, so the test needs only the emitted server.
    await promisify(execFile)(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.demo.json'], { cwd: root }).catch(() => undefined)
    if (!existsSync(`${root}${demo}`)) throw new Error(`${demo} was not built`)
    // Processes that fail at start-up, started together now: each takes seconds just to load.
    const blocker = createServer()
    t.teardown(() => blocker.close())
    const { port } = await new Promise<{ port: number }>(resolve => blocker.listen(0, '127.0.0.1', () => resolve(blocker.address() as { port: number })))
    failing = {
      STORE: runDemo({ STORE: 'bogus' }).exited,
      PORT: runDemo({ PORT: 'eighty' }).exited,
      API_TOKENS: runDemo({ API_TOKENS: 'no-right' }).exited,
      inUse: runDemo({ PORT: String(port) }).exited
    }
  })

  t.test('serves each operation as the curl lines of docs/demo.md do, then stops on SIGTERM with exit 0', async t => {
    const { url, child, exited } = await startDemo(t)
    const health = await fetch(`${url}/health`)
    t.same({ status: health.status, body: await health.json() }, { status: 200, body: { status: 'ok' } })

    const created = await fetch(`${url}/v1/authors`, { method: 'POST', headers: { ...auth, ...json }, body: JSON.stringify({ name: 'Ursula K. Le Guin', country: 'US' }) })
    t.equal(created.status, 201)
    const location = created.headers.get('location') as string
    const author = (await created.json()).data.author
    t.equal(location, `/v1/authors/${author.id}`)

    const read = await fetch(`${url}${location}`, { headers: auth })
    t.same({ status: read.status, etag: read.headers.get('etag'), body: await read.json() }, { status: 200, etag: '"1"', body: { data: { author } } })

    const head = await fetch(`${url}${location}`, { method: 'HEAD', headers: auth })
    t.same({ status: head.status, etag: head.headers.get('etag'), body: await head.text() }, { status: 200, etag: '"1"', body: '' })

    const options = await fetch(`${url}/v1/authors`, { method: 'OPTIONS', headers: auth })
    t.same({ status: options.status, allow: options.headers.get('allow') }, { status: 200, allow: 'GET, HEAD, POST, OPTIONS' })

    const replaced = await fetch(`${url}${location}`, { method: 'PUT', headers: { ...auth, ...json, 'if-match': '"1"' }, body: JSON.stringify({ name: 'Ursula Le Guin', born: '1929-10-21' }) })
    t.same({ status: replaced.status, etag: replaced.headers.get('etag') }, { status: 200, etag: '"2"' })

    const patched = await fetch(`${url}${location}`, { method: 'PATCH', headers: { ...auth, 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ country: 'US' }) })
    t.same((await patched.json()).data.author, { id: author.id, name: 'Ursula Le Guin', born: '1929-10-21', country: 'US' })

    const book = await fetch(`${url}/v1/books`, { method: 'POST', headers: { ...auth, ...json }, body: JSON.stringify({ title: 'The Dispossessed', authorId: author.id, year: 1974 }) })
    t.equal(book.status, 201)
    const nested = await fetch(`${url}${location}/books`, { headers: auth })
    t.same((await nested.json()).data.books.map((b: { title: string }) => b.title), ['The Dispossessed'])

    const refused = await fetch(`${url}${location}`, { method: 'DELETE', headers: auth })
    t.equal(refused.status, 409)
    t.equal((await fetch(`${url}${book.headers.get('location') as string}`, { method: 'DELETE', headers: auth })).status, 204)
    t.equal((await fetch(`${url}${location}`, { method: 'DELETE', headers: auth })).status, 204)
    const gone = await fetch(`${url}${location}`, { headers: auth })
    t.same({ status: gone.status, type: gone.headers.get('content-type') }, { status: 404, type: 'application/problem+json; charset=utf-8' })

    child.kill('SIGTERM')
    t.same(await exited, { code: 0, stderr: '' })
  })

  t.test('prints, after its log lines, where the API, docs and document are, the tokens and a curl line that works', async t => {
    const demo = await startDemo(t)
    const curl = await demo.printed(line => line.trimStart().startsWith('curl '))
    const out = demo.stdout
    const limits = out.findIndex(line => line.startsWith('{') && JSON.parse(line).msg === 'limits')
    t.ok(limits > 0, 'the limits are logged first')
    t.same(out.slice(0, limits).filter(line => !line.startsWith('{')), [], 'every line before the welcome is a JSON log record')
    const api = `${demo.url}/v1`
    t.same(out.slice(limits + 1), [
      'Books demo API is running.',
      `  API:      ${api}`,
      `  Docs:     ${api}/docs  (no token needed)`,
      `  OpenAPI:  ${api}/openapi.json`,
      // The store (memory) started empty, so this start wrote the sample catalogue.
      '  Sample:   3 authors, 5 books and 4 reviews written into the empty store (SEED=false skips this)',
      '  Tokens (Authorization: Bearer <token>, from API_TOKENS):',
      // The default API_TOKENS (docs/demo-contract.md "Starting it"), each with its user and right.
      '    dev-token    user dev     write: every operation',
      '    read-token   user reader  read: GET, HEAD and OPTIONS only',
      '    alice-token  user alice   write: every operation',
      '    bob-token    user bob     write: every operation',
      '    admin-token  user admin   admin: every operation; sees every review and moderatorNote',
      'Try:',
      `  curl -H 'Authorization: Bearer dev-token' ${api}/books`
    ])
    // The curl line, run as curl would run it.
    const [, header, value, target] = /^ {2}curl -H '([^:]+): ([^']+)' (\S+)$/.exec(curl) as RegExpExecArray
    const books = await fetch(target, { headers: { [header]: value } })
    const titles = (await books.json()).data.books.map((book: { title: string }) => book.title)
    t.same({ status: books.status, titles }, { status: 200, titles: ['The Bone People', 'Things Fall Apart', 'Arrow of God', 'Invisible Cities', 'If on a Winter\'s Night a Traveller'] })
    for (const [page, type] of [[`${api}/docs`, 'text/html'], [`${api}/openapi.json`, 'application/json']]) {
      const res = await fetch(page)
      await res.arrayBuffer()
      t.match({ status: res.status, type: res.headers.get('content-type') }, { status: 200, type: new RegExp(`^${type}`) }, page)
    }
    demo.child.kill('SIGTERM')
    t.same(await demo.exited, { code: 0, stderr: '' })
  })

  t.test('SIGTERM lets a request in flight finish, then exits 0', async t => {
    const { url, child, log, exited } = await startDemo(t)
    const body = JSON.stringify({ name: 'Slow Upload' })
    const req = request(`${url}/v1/authors`, { method: 'POST', headers: { ...auth, ...json, 'content-length': String(Buffer.byteLength(body)) } })
    const response = new Promise<{ status: number, body: string }>((resolve, reject) => {
      req.on('response', res => {
        let text = ''
        res.setEncoding('utf8').on('data', chunk => { text += chunk }).on('end', () => resolve({ status: res.statusCode as number, body: text }))
      })
      req.on('error', reject)
    })
    req.write(body.slice(0, 5))
    // The server has the headers and waits for the rest of the body: the request is in flight.
    await log(line => line.msg === 'incoming request')
    child.kill('SIGTERM')
    await log(line => line.msg === 'closing: finishing requests in flight')
    // An impatient second signal changes nothing: the request still finishes.
    child.kill('SIGTERM')
    t.equal(child.exitCode, null, 'still running while a request is in flight')
    req.end(body.slice(5))
    const finished = await response
    t.same({ status: finished.status, name: JSON.parse(finished.body).data.author.name }, { status: 201, name: 'Slow Upload' })
    t.same(await exited, { code: 0, stderr: '' })
  })

  t.test('a request pipelined behind one in flight at SIGTERM is served, with Connection: close and the usual headers', async t => {
    const { url, child, log, exited } = await startDemo(t)
    const { hostname, port } = new URL(url)
    const body = JSON.stringify({ name: 'Pipelined' })
    const socket = connect(Number(port), hostname)
    let received = ''
    socket.setEncoding('utf8').on('data', (chunk: string) => { received += chunk })
    const closed = new Promise(resolve => socket.on('close', resolve))
    socket.write(`POST /v1/authors HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth.authorization}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`)
    await log(line => line.msg === 'incoming request')
    child.kill('SIGTERM')
    await log(line => line.msg === 'closing: finishing requests in flight')
    // The rest of the first request and all of a second one arrive after the server began to close.
    socket.write(`${body.slice(5)}GET /v1/authors HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth.authorization}\r\n\r\n`)
    await closed
    const [first, second] = received.split(/(?=HTTP\/1\.1 )/)
    t.match(first, /^HTTP\/1\.1 201 Created\r\n/)
    t.match(second, /^HTTP\/1\.1 200 OK\r\n(?:[^]*\r\n)?connection: close\r\n/i)
    t.match(second, /\r\nx-content-type-options: nosniff\r\n[^]*\r\ncontent-type: application\/json; charset=utf-8\r\n/)
    // Node runs the two handlers side by side, so whether the list shows the new author is a race.
    t.match(JSON.parse(second.slice(second.indexOf('\r\n\r\n') + 4)), { data: { authors: Array } })
    t.same(await exited, { code: 0, stderr: '' })
  })

  t.test('SIGINT closes it the same way', async t => {
    const { child, exited, log } = await startDemo(t, { LOG_LEVEL: '' })
    child.kill('SIGINT')
    t.match(await log(line => line.msg === 'closing: finishing requests in flight'), { signal: 'SIGINT' })
    t.same(await exited, { code: 0, stderr: '' })
  })

  for (const setting of ['STORE', 'PORT', 'API_TOKENS'] as const) {
    t.test(`a bad ${setting} stops start-up with one line naming it and exit 1`, async t => {
      const { code, stderr } = await failing[setting]
      t.equal(code, 1)
      t.match(stderr, new RegExp(`^Invalid setting ${setting}: [^\\n]+\\n$`))
    })
  }

  t.test('a port already in use stops start-up with one line and exit 1', async t => {
    const { code, stderr } = await failing.inUse
    t.equal(code, 1)
    t.match(stderr, /^Start-up failed: listen EADDRINUSE[^\n]+\n$/)
  })
})
