// What Fastify's hooks cost by themselves (issue 21, the memory targets): one bare Fastify server
// answers a fixed small JSON body from a route with no hooks, and from the same route with six
// hooks that do nothing (two onRequest, two preParsing, one onSend, one onResponse: as many as the
// plugin's RETRIEVE route runs), and wrk loads the two in turns. The difference is the floor of
// the price of any per-route step, before it does any work.
// Usage, after `npx tsc -p benchmarks/tsconfig.json`: node dist/benchmarks/hook-floor.js [rounds] [seconds]
import { pathToFileURL } from 'node:url'
import Fastify from 'fastify'
import type { onRequestHookHandler, onSendHookHandler, preParsingHookHandler } from 'fastify'
import { loadRequest, median, startServer } from './harness.js'
import type { LoadRequest, Server } from './harness.js'

async function serve () {
  const app = Fastify()
  const body = JSON.stringify({ data: { id: '00000000-0000-7000-8100-000000000000', title: 'The Dispossessed', year: 1974 } })
  const answer = () => body
  const pass: onRequestHookHandler = (_request, _reply, done) => { done() }
  const passBody: preParsingHookHandler = (_request, _reply, payload, done) => { done(null, payload) }
  const passPayload: onSendHookHandler = (_request, _reply, payload, done) => { done(null, payload) }
  app.get('/bare', answer)
  app.get('/hooked', { onRequest: [pass, pass], preParsing: [passBody, passBody], onSend: passPayload, onResponse: pass }, answer)
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  process.stdout.write(`listening ${url}\n`)
  process.on('SIGTERM', () => { app.close().then(() => process.exit(0), () => process.exit(1)) })
}

async function main () {
  const [rounds, seconds] = [Number(process.argv[2] ?? 5), Number(process.argv[3] ?? 3)]
  const server = await startServer('./hook-floor.js', 'memory', [], { HOOK_FLOOR_SERVE: '1' }) as Server
  try {
    const request = (path: string): LoadRequest => ({ method: 'GET', path, headers: {}, keyed: false, status: 200 })
    for (const path of ['/bare', '/hooked']) await loadRequest(server, request(path), 1, 10)
    const micros: Record<string, number[]> = { '/bare': [], '/hooked': [] }
    const ratios: number[] = []
    for (let round = 0; round < rounds; round++) {
      const [bare, hooked] = [await loadRequest(server, request('/bare'), seconds, 10), await loadRequest(server, request('/hooked'), seconds, 10)]
      micros['/bare'].push(bare.cpuMicros ?? NaN)
      micros['/hooked'].push(hooked.cpuMicros ?? NaN)
      ratios.push(hooked.rps / bare.rps)
    }
    const [bare, hooked] = [median(micros['/bare']), median(micros['/hooked'])]
    process.stdout.write(`server CPU per response: no hooks ${bare.toFixed(1)} µs, six hooks ${hooked.toFixed(1)} µs (+${(hooked - bare).toFixed(1)}); req/s hooked ÷ bare ${median(ratios).toFixed(2)} (medians of ${rounds} rounds of ${seconds} s)\n`)
  } finally {
    await server.stop()
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await (process.env.HOOK_FLOOR_SERVE === '1' ? serve() : main())
