// A peer side on memory (peers.ts): json-server 0.17 with its default middlewares (logging off)
// over the seed's authors and books, held in its in-memory database. Loaded from
// benchmarks/peers/. Prints `listening <url>` or `unavailable <why>`.
import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import { requirePeer } from './peers.js'
import { generate } from './seed.js'

interface JsonServer {
  create (): { use (handler: unknown): void, listen (port: number, host: string, ready: () => void): Server }
  defaults (options: { logger: boolean }): unknown
  router (data: unknown): unknown
}

function main () {
  const jsonServer = requirePeer<JsonServer>('json-server')
  if ('unavailable' in jsonServer) return process.stdout.write(`unavailable ${jsonServer.unavailable}\n`)
  const { authors, books } = generate()
  const app = jsonServer.create()
  app.use(jsonServer.defaults({ logger: false }))
  app.use(jsonServer.router({ authors, books }))
  const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
    process.stdout.write(`listening http://127.0.0.1:${(server.address() as AddressInfo).port}\n`)
  })
  process.on('SIGTERM', () => { server.close(() => process.exit(0)) })
}

main()
