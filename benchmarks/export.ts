// Export of 100,000 books on PostgreSQL (docs/export.md; demo contract "Export": memory stays flat,
// less than 50 MB added to the server's resident memory). The demo server runs in a child process
// on a fresh schema; the books go into its table with one INSERT … generate_series; then the whole
// collection is read as NDJSON and as CSV over HTTP, counting lines. Reported: rows per second and
// the child's resident memory before, and at its peak (VmHWM, Linux) after each export.
// Usage (needs DATABASE_URL): node dist/benchmarks/export.js [--books N]; prints JSON.
import { fork } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import pg from 'pg'

const argument = (name: string) => { const at = process.argv.indexOf(name); return at === -1 ? undefined : process.argv[at + 1] }

/** The child: the demo on the given database, unseeded, printing its address. */
async function serve () {
  const { buildDemoApp } = await import('../demo/app.js')
  const { loadConfig } = await import('../demo/config.js')
  const app = await buildDemoApp(loadConfig({ DATABASE_URL: process.env.DATABASE_URL as string, RATE_LIMIT_MAX: '1000000', CURSOR_SECRET: 'a-benchmark-secret-of-enough-length' }), { logger: false })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  process.send?.({ base })
}

/** Resident memory of a process, in MB: now (VmRSS) and at its peak (VmHWM). */
function memoryOf (pid: number): { rss: number, peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN)
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 }
}

/** Reads one export through, counting lines; the time to the first byte and to the end. */
async function exportOnce (base: string, accept: string): Promise<{ lines: number, firstByteMs: number, totalMs: number, bytes: number }> {
  const start = performance.now()
  const response = await fetch(`${base}/v1/books?sort=title`, { headers: { accept, authorization: 'Bearer read-token' } })
  if (response.status !== 200 || response.body === null) throw new Error(`export: ${response.status} ${await response.text()}`)
  let firstByteMs = NaN
  let lines = 0
  let bytes = 0
  for await (const chunk of response.body) {
    if (Number.isNaN(firstByteMs)) firstByteMs = performance.now() - start
    bytes += chunk.length
    for (const byte of chunk) if (byte === 10) lines++
  }
  return { lines, firstByteMs, totalMs: performance.now() - start, bytes }
}

async function main () {
  const books = Number(argument('--books') ?? 100_000)
  const url = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test')
  const schema = `bench_export_${randomBytes(4).toString('hex')}`
  const admin = new pg.Pool({ connectionString: url.href, max: 1 })
  await admin.query(`CREATE SCHEMA "${schema}"`)
  url.searchParams.set('options', `-c search_path=${schema}`)
  let child: ChildProcess | undefined
  try {
    child = fork(fileURLToPath(import.meta.url), ['--serve'], { env: { ...process.env, DATABASE_URL: url.href } })
    const base = await new Promise<string>((resolve, reject) => {
      child?.once('message', message => resolve((message as { base: string }).base))
      child?.once('exit', code => reject(new Error(`server exited ${String(code)}`)))
    })
    await admin.query(`INSERT INTO "${schema}".authors (id, name, version, modified_at) VALUES ('a1', 'Bench', 1, now())`)
    await admin.query(`INSERT INTO "${schema}".books (id, title, "authorId", year, rating, available, "reviewCount", version, modified_at)
      SELECT 'b' || lpad(g::text, 7, '0'), 'Book number ' || g || ', "quoted"', 'a1', 1900 + g % 120, (g % 50) / 10.0, g % 3 <> 0, 0, 1, now()
      FROM generate_series(1, $1::int) AS g`, [books])
    await admin.query(`ANALYZE "${schema}".books`)
    const pid = child.pid as number
    const before = memoryOf(pid)
    const results: Record<string, unknown> = {}
    for (const [name, accept] of [['ndjson', 'application/x-ndjson'], ['csv', 'text/csv'], ['ndjson again', 'application/x-ndjson']] as const) {
      const run = await exportOnce(base, accept)
      const rows = name === 'csv' ? run.lines - 1 : run.lines
      if (rows < books) throw new Error(`${name}: ${rows} rows of ${books}`)
      const after = memoryOf(pid)
      results[name] = { rows, rowsPerSecond: Math.round(rows / (run.totalMs / 1000)), firstByteMs: Math.round(run.firstByteMs), totalMs: Math.round(run.totalMs), megabytes: Math.round(run.bytes / 1e5) / 10, peakRssMb: Math.round(after.peak) }
    }
    const peak = memoryOf(pid).peak
    console.log(JSON.stringify({ books, rssBeforeMb: Math.round(before.rss), peakRssMb: Math.round(peak), peakAddedMb: Math.round(peak - before.rss), results }, null, 2))
  } finally {
    child?.kill()
    await admin.query(`DROP SCHEMA "${schema}" CASCADE`)
    await admin.end()
  }
}

if (process.argv.includes('--serve')) await serve()
else await main()
