// Slow and oversized clients (spec "Limits"), over
// real sockets: the started demo (`demo/server.ts`) reports its limits, and answers
// oversized headers with 431, oversized bodies with 413 and long query strings with 414 as
// problem+json without reading the rest; the demo app with the same wiring and short timeouts
// shows slow headers, slow bodies, silent and non-reading clients cut off by the server.
import t from 'tap'
import type { Test as Tap } from 'tap'
import { spawn } from 'node:child_process'
import { connect } from 'node:net'
import type { Socket } from 'node:net'
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyServerOptions } from 'fastify'
import { buildDemoApp } from '../../demo/app.js'
import { loadConfig } from '../../demo/config.js'

const auth = 'Authorization: Bearer dev-token\r\n'

interface Exchange {
  /** Everything the server sent. */
  readonly received: string
  /** Milliseconds from connecting to the server closing the connection. */
  readonly closedAfter: number
  /** Bytes this client had written when the first byte of the answer came. */
  readonly sentWhenAnswered: number
}

/** What a talking client knows: it stops once the server has answered or hung up. */
interface Talk { answered: boolean, closed: boolean, sent: number }

/**
 * Opens a socket and lets `talk` write to it (slowly, or a lot) until the server answers or
 * closes it. The client stops writing at the first byte of the answer, so the server's reset
 * of a half-sent request cannot discard the answer before it is read.
 */
function converse (port: number, talk: (socket: Socket, state: Talk) => Promise<void>): Promise<Exchange> {
  return new Promise(resolve => {
    const started = Date.now()
    const state: Talk = { answered: false, closed: false, sent: 0 }
    let sentWhenAnswered = -1
    let received = ''
    const socket = connect(port, '127.0.0.1', () => { talk(socket, state).catch(() => {}) })
    const write = socket.write.bind(socket)
    socket.write = ((chunk: string | Buffer, ...rest: never[]) => {
      if (state.answered || state.closed) return false
      state.sent += Buffer.byteLength(chunk)
      return write(chunk, ...rest)
    }) as typeof socket.write
    socket.on('data', chunk => {
      if (!state.answered) sentWhenAnswered = state.sent
      state.answered = true
      received += String(chunk)
    })
    socket.on('error', () => {})
    socket.on('close', () => {
      state.closed = true
      resolve({ received, closedAfter: Date.now() - started, sentWhenAnswered })
    })
  })
}

/** Writes `piece` `times` times, paced so the answer can overtake it, until the server answers. */
async function flood (socket: Socket, state: Talk, piece: string, times: number) {
  for (let i = 0; i < times && !state.answered && !state.closed; i++) {
    socket.write(piece)
    await sleep(1)
  }
}

/** The status, headers and JSON body of a raw HTTP response. */
function parse (raw: string) {
  const split = raw.indexOf('\r\n\r\n')
  const [statusLine, ...lines] = raw.slice(0, split).split('\r\n')
  const headers = Object.fromEntries(lines.map(line => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(raw.slice(split + 4)) as Record<string, unknown> }
}

/** Writes `text` one character at a time, `every` milliseconds apart, until the server hangs up. */
async function dribble (socket: Socket, state: Talk, text: string, every: number) {
  for (const char of text) {
    if (state.answered || state.closed) return
    socket.write(char)
    await sleep(every)
  }
}

t.test('the started demo', async t => {
  const child = spawn(process.execPath, [...process.execArgv, 'demo/server.ts'], {
    // SEED=false: the store starts as the test left it, without the sample catalogue.
    env: { ...process.env, STORE: 'memory', DATABASE_URL: '', DATABASE_READ_URL: '', REDIS_URL: '', SEED: 'false', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', RATE_LIMIT_MAX: '1000000' },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  t.teardown(() => { child.kill('SIGKILL') })
  let url = ''
  let limits: Record<string, unknown> = {}
  for await (const line of createInterface({ input: child.stdout })) {
    const entry = JSON.parse(line) as { msg: string } & Record<string, unknown>
    if (entry.msg.startsWith('Server listening at ')) url = entry.msg.slice('Server listening at '.length)
    if (entry.msg === 'limits') {
      limits = entry
      break
    }
  }
  child.stdout.resume()
  const port = Number(new URL(url).port)

  t.test('reports the limits it runs with', async t => {
    t.match(limits, { requestTimeout: 30000, headersTimeout: 10000, connectionsCheckingInterval: 1000, connectionTimeout: 75000, keepAliveTimeout: 72000, maxHeaderSize: 65536, bodyLimit: 1048576 })
  })

  t.test('headers over 64 KB: 431 problem+json before the header block even ends', async t => {
    const exchange = await converse(port, async (socket, state) => {
      socket.write(`GET /v1/authors HTTP/1.1\r\nHost: x\r\n${auth}X-Pad: `)
      // Up to 8 MB offered in 16 KB pieces; the header block is never finished.
      await flood(socket, state, 'a'.repeat(16384), 512)
    })
    const res = parse(exchange.received)
    t.match(res, { status: 431, headers: { 'content-type': /^application\/problem\+json/ }, body: { status: 431, type: '/v1/problems/headers-too-large' } })
    // Answered at the socket, outside every route, yet with the same security headers and a Request-Id.
    t.match(res.headers, { 'strict-transport-security': 'max-age=31536000; includeSubDomains', 'x-frame-options': 'DENY', 'referrer-policy': 'no-referrer', 'content-security-policy': "default-src 'none'; frame-ancestors 'none'", 'request-id': /^[0-9a-f-]{36}$/ })
    t.ok(exchange.sentWhenAnswered > 65536 && exchange.sentWhenAnswered < 8_000_000, `answered after ${exchange.sentWhenAnswered} bytes, with the header block unfinished`)
  })

  t.test('a declared body over 1 MB: 413 problem+json before any of it is sent', async t => {
    const exchange = await converse(port, async socket => {
      socket.write(`POST /v1/authors HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 50000000\r\n\r\n`)
    })
    const res = parse(exchange.received)
    t.match(res, { status: 413, headers: { 'content-type': /^application\/problem\+json/, connection: 'close' }, body: { status: 413, type: '/v1/problems/body-too-large' } })
  })

  t.test('a chunked body that grows past 1 MB: 413 problem+json, and the server stops reading', async t => {
    const exchange = await converse(port, async (socket, state) => {
      socket.write(`POST /v1/authors HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`)
      // Up to 8 MB in 16 KB chunks, never finished: only the server can end this exchange.
      await flood(socket, state, `4000\r\n${'a'.repeat(0x4000)}\r\n`, 512)
    })
    const res = parse(exchange.received)
    t.match(res, { status: 413, headers: { 'content-type': /^application\/problem\+json/ }, body: { status: 413, type: '/v1/problems/body-too-large' } })
    t.ok(exchange.sentWhenAnswered > 1_048_576 && exchange.sentWhenAnswered < 8_000_000, `answered after ${exchange.sentWhenAnswered} bytes, with the body unfinished`)
  })

  t.test('headers sent one byte every 500 ms are cut off by the demo\'s own 10 s limit, not Node\'s 30 s check', async t => {
    const slow = await converse(port, async (socket, state) => {
      await dribble(socket, state, `GET /v1/authors HTTP/1.1\r\nHost: x\r\n${auth}X-Slow: ${'s'.repeat(100)}\r\n\r\n`, 500)
    })
    // headersTimeout 10 s, checked every second: closed between 10 and 10 + 1 s (+ slack for a busy machine).
    t.ok(slow.closedAfter >= 9_500 && slow.closedAfter < 13_000, `closed after ${slow.closedAfter} ms`)
    t.match(parse(slow.received), { status: 408, body: { status: 408, type: '/v1/problems/request-timeout' } })
  })

  t.test('a query string over 4096 characters: 414 problem+json; a request line over 64 KB: 431', async t => {
    const long = await converse(port, async socket => { socket.write(`GET /v1/authors?name=${'a'.repeat(5000)} HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`) })
    t.match(parse(long.received), { status: 414, headers: { 'content-type': /^application\/problem\+json/ }, body: { status: 414, type: '/v1/problems/uri-too-long' } })
    const huge = await converse(port, async socket => { socket.write(`GET /v1/authors?name=${'a'.repeat(70_000)} HTTP/1.1\r\nHost: x\r\n\r\n`) })
    t.match(parse(huge.received), { status: 431, body: { type: '/v1/problems/headers-too-large' } })
  })
})

t.test('slow clients are cut off by the server\'s timeouts', async t => {
  // The demo app's own wiring (client error handler, header size) with timeouts short enough to wait for.
  // demo/server.ts's settings scaled down 75 times: headers 10 s, request 30 s, silence 75 s.
  const requestTimeout = 400
  const connectionTimeout = 1000
  // `http` replaces buildDemoApp's own, so it repeats maxHeaderSize; Fastify() takes it, its type here does not.
  const app = await buildDemoApp(loadConfig({ STORE: 'memory', RATE_LIMIT_MAX: '1000000' }), {
    requestTimeout, connectionTimeout, http: { maxHeaderSize: 65536, connectionsCheckingInterval: 25 }
  } as FastifyServerOptions)
  app.server.headersTimeout = 133
  t.teardown(() => app.close())
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const bound = requestTimeout + 600

  async function expectTimeout (t: Tap, exchange: Exchange) {
    t.ok(exchange.closedAfter < bound, `closed after ${exchange.closedAfter} ms (bound ${bound})`)
    t.match(parse(exchange.received), { status: 408, headers: { 'content-type': /^application\/problem\+json/ }, body: { status: 408, type: '/v1/problems/request-timeout' } })
  }

  t.test('headers sent one byte at a time (slowloris): 408 and closed', async t => {
    await expectTimeout(t, await converse(port, async (socket, state) => {
      await dribble(socket, state, `GET /v1/authors HTTP/1.1\r\nHost: x\r\n${auth}X-Slow: ${'s'.repeat(1000)}\r\n\r\n`, 20)
    }))
  })

  t.test('a body sent one byte at a time: 408 and closed', async t => {
    const body = JSON.stringify({ name: 'x'.repeat(500) })
    await expectTimeout(t, await converse(port, async (socket, state) => {
      socket.write(`POST /v1/authors HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`)
      await dribble(socket, state, body, 20)
    }))
  })

  t.test('a connection that never sends a request: 408 and closed', async t => {
    await expectTimeout(t, await converse(port, async () => {}))
  })

  t.test('a client that stops reading responses is disconnected', async t => {
    // Enough pipelined requests that the answers fill the socket buffers while the client reads nothing.
    const writer = await app.inject({ method: 'POST', url: '/v1/authors', headers: { authorization: 'Bearer dev-token' }, payload: { name: 'n'.repeat(200) } })
    t.equal(writer.statusCode, 201)
    const request = `GET /v1/authors?pageSize=100 HTTP/1.1\r\nHost: x\r\n${auth}\r\n`
    const socket = connect(port, '127.0.0.1')
    socket.on('error', () => {})
    socket.pause()
    await new Promise(resolve => socket.once('connect', resolve))
    socket.write(request.repeat(20000))
    const connections = () => new Promise<number>((resolve, reject) => app.server.getConnections((error, count) => error === null ? resolve(count) : reject(error)))
    t.equal(await connections(), 1, 'connected')
    const started = Date.now()
    while (await connections() > 0 && Date.now() - started < connectionTimeout + 5000) await sleep(50)
    t.equal(await connections(), 0, `the server closed it after ${Date.now() - started} ms of silence`)
    socket.destroy()
  })
})
