// Paging benchmark (spec "Paging stability" 4: retrieve data efficiently): LIST with a filter and a
// sort over 100,000 books on the memory store, through the whole plugin (inject), timing pages from
// the first to a deep one in token mode (keyset) and in offset mode. Keyset paging should stay flat
// as the page gets deeper.
// Usage: node dist/benchmarks/paging.js [--quick]; prints a table, then one JSON line.
import { pathToFileURL } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { benchConfig, buildPluginApp, seededMemoryStore } from './server.js'

const query = 'filter=year%20ge%202000&sort=-rating'
const headers = { authorization: 'Bearer dev-token', accept: 'application/json' }

export interface PagingResult {
  readonly books: number
  readonly query: string
  /** Median milliseconds per page of 20 starting at each offset. */
  readonly pages: ReadonlyArray<{ readonly offset: number, readonly tokenMs: number, readonly offsetMs: number }>
}

async function get (app: FastifyInstance, url: string) {
  const response = await app.inject({ url, headers })
  if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body}`)
  return response.json() as { links: Array<{ rel: string, href: string }> }
}

/** Tokens that continue after each offset, collected by walking `next` links in pages of 100. */
async function tokensAt (app: FastifyInstance, offsets: readonly number[]): Promise<Map<number, string>> {
  const tokens = new Map<number, string>()
  let url = `/v1/books?${query}&pageSize=100`
  for (let seen = 100; seen <= Math.max(...offsets); seen += 100) {
    const next = (await get(app, url)).links.find(link => link.rel === 'next')
    if (next === undefined) throw new Error(`fewer than ${seen} books match`)
    url = next.href
    if (offsets.includes(seen)) tokens.set(seen, new URLSearchParams(url.split('?')[1]).get('token') as string)
  }
  return tokens
}

async function medianMs (app: FastifyInstance, url: string, times: number): Promise<number> {
  const samples: number[] = []
  for (let i = 0; i < times; i++) {
    const start = process.hrtime.bigint()
    await get(app, url)
    samples.push(Number(process.hrtime.bigint() - start) / 1e6)
  }
  samples.sort((a, b) => a - b)
  return samples[samples.length >> 1]
}

async function main () {
  const quick = process.argv.includes('--quick')
  // About a fifth of the books match the filter: the deepest offset stays inside the result.
  const books = quick ? 20_000 : 100_000
  const offsets = quick ? [0, 1000, 3000] : [0, 1000, 5000, 10000, 18000]
  const app = await buildPluginApp(benchConfig({}), await seededMemoryStore(1000, books))
  const tokens = await tokensAt(app, offsets)
  const times = quick ? 5 : 21
  const pages = []
  for (const offset of offsets) {
    const tokenUrl = offset === 0 ? `/v1/books?${query}` : `/v1/books?${query}&token=${tokens.get(offset) as string}`
    const page = { offset, tokenMs: await medianMs(app, tokenUrl, times), offsetMs: await medianMs(app, `/v1/books?${query}&offset=${offset}`, times) }
    pages.push(page)
    process.stdout.write(`paging  ${books} books  offset ${String(offset).padStart(6)}  token ${page.tokenMs.toFixed(2).padStart(7)} ms  offset ${page.offsetMs.toFixed(2).padStart(7)} ms\n`)
  }
  await app.close()
  process.stdout.write(JSON.stringify({ books, query: decodeURIComponent(query), pages } satisfies PagingResult) + '\n')
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main()
