// What run.ts and profile.ts share: starting and stopping a server script, sending a case's
// request, and loading a server over loopback, bounded in time, with wrk where it is installed and
// autocannon otherwise (BENCH_DRIVER forces one).
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { commonHeaders } from './cases.js'
import { hasWrk, wrkLoad } from './wrk.js'
import type { BenchCase, StoreKind } from './cases.js'
import type { FastifyInstance } from 'fastify'

/** A compiled script beside this one (dist/benchmarks/). */
/** The median of a run's rounds (this machine is noisy: every figure quoted is one). */
export function median (values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

export const here = (file: string) => fileURLToPath(new URL(file, import.meta.url))

export interface Server {
  readonly origin: string
  /** Distinct SQL texts the server reported (`sql <json>` lines), in order. */
  readonly statements: readonly string[]
  /** CPU seconds the server process has used so far (Linux), or undefined where /proc is missing. */
  cpuSeconds (): number | undefined
  stop (): Promise<void>
}

/** utime + stime of a process, from /proc/<pid>/stat (fields 14 and 15, in clock ticks of 1/100 s). */
export function cpuSecondsOf (pid: number | undefined): number | undefined {
  try {
    const stat = readFileSync(`/proc/${String(pid)}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return undefined
  }
}

/** Starts a server script; resolves with its origin once it prints `listening <url>`, or with the reason it prints after `unavailable`. */
export function startServer (script: string, store: StoreKind, nodeArgs: readonly string[] = [], env: Readonly<Record<string, string>> = {}): Promise<Server | { unavailable: string }> {
  const child = spawn(process.execPath, [...nodeArgs, here(script)], { env: { ...process.env, PORT: '0', STORE: store, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
  return new Promise((resolve, reject) => {
    let output = ''
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`${script} did not start within 120 s`)) }, 120_000)
    child.once('exit', code => { clearTimeout(timer); reject(new Error(`${script} exited with ${String(code)} before listening`)) })
    const statements: string[] = []
    let started = false
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk
      const lines = output.split('\n')
      output = lines.pop() as string
      for (const line of lines) {
        if (line.startsWith('sql ')) statements.push(JSON.parse(line.slice(4)) as string)
        if (started) continue
        const listening = /^listening (\S+)$/.exec(line)
        const unavailable = /^unavailable (.*)$/.exec(line)
        if (listening === null && unavailable === null) continue
        started = true
        clearTimeout(timer)
        child.removeAllListeners('exit')
        if (unavailable !== null) resolve({ unavailable: unavailable[1] })
        else resolve({ origin: listening?.[1] as string, statements, cpuSeconds: () => cpuSecondsOf(child.pid), stop: () => stop(child) })
      }
    })
  })
}

function stop (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve()
  return new Promise(resolve => {
    const force = setTimeout(() => child.kill('SIGKILL'), 5000)
    child.once('exit', () => { clearTimeout(force); resolve() })
    child.kill('SIGTERM')
  })
}

/** One request shape, sent again and again: a case's on the plugin and baseline sides, a peer's equivalent of it. */
export interface LoadRequest {
  readonly method: 'GET' | 'POST'
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string
  /** Each request carries an Idempotency-Key of its own: a repeated one would be a replay. */
  readonly keyed: boolean
  /** The status every response must have; any other counts as an error. */
  readonly status: number
}

/** A case's request to the plugin or a baseline, at `path` (the case's, with its token filled in). */
export const caseRequest = (benchCase: BenchCase, path: string): LoadRequest => ({
  method: benchCase.method,
  path,
  headers: { ...commonHeaders, ...benchCase.headers },
  ...(benchCase.body === undefined ? {} : { body: JSON.stringify(benchCase.body) }),
  keyed: benchCase.keyed === true,
  status: benchCase.status
})

/** A new Idempotency-Key for a keyed request: unique in this run and across runs on one database. */
let keys = 0
const runId = `${process.pid}-${Date.now()}`
const freshKey = () => `"bench-${runId}-${++keys}"`

function requestInit (request: LoadRequest) {
  return {
    method: request.method,
    headers: { ...request.headers, ...(request.keyed ? { 'idempotency-key': freshKey() } : {}) },
    body: request.body
  }
}

/** Follows `next` links with pages of 100 (tokens are not bound to the page size) until `depth` items lie behind; returns the last token. */
export async function tokenAt (origin: string, depth: number): Promise<string> {
  let path = '/v1/books?pageSize=100'
  for (let seen = 0; seen < depth; seen += 100) {
    const response = await fetch(origin + path, { headers: commonHeaders })
    const body = await response.json() as { links: Array<{ rel: string, href: string }> }
    const next = body.links.find(link => link.rel === 'next')
    if (next === undefined) throw new Error(`the collection ends before ${depth} items`)
    path = next.href
  }
  return new URLSearchParams(path.split('?')[1]).get('token') as string
}

// Tokens are sealed with a random IV and created ids are fresh UUIDv7s: mask them before comparing.
const mask = (text: string) => text
  .replace(/token=[A-Za-z0-9_-]+/g, 'token=…')
  .replace(/01[0-9a-f]{6}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<new id>')

/** What a client sees, for comparing the two sides: status, the headers the contract names, the body. */
export async function answer (origin: string, path: string, benchCase: BenchCase): Promise<string> {
  const response = await fetch(origin + path, requestInit(caseRequest(benchCase, path)))
  // A created record's Last-Modified is the second each side wrote it in.
  const compared = benchCase.method === 'POST' ? ['content-type', 'etag', 'location'] : ['content-type', 'etag', 'last-modified', 'location']
  const headers = compared.map(name => `${name}: ${response.headers.get(name) ?? '-'}`)
  return mask(`${response.status}\n${headers.join('\n')}\n${await response.text()}`)
}

export interface Measurement {
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
  /** Server CPU microseconds per response: barely moved by other processes competing for the cores. */
  readonly cpuMicros: number | undefined
}

/** What one response weighs on the wire: the status line and header lines, and the body (after any transfer coding). */
export interface ResponseBytes { readonly header: number, readonly body: number }

/** Sends a request once over a socket of its own: status, body text and the bytes of each part. */
export function probe (origin: string, request: LoadRequest): Promise<{ status: number, body: string, bytes: ResponseBytes }> {
  const { method, headers, body } = requestInit(request)
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(origin + request.path, { method, headers, agent: false }, response => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.once('error', reject)
      response.once('end', () => {
        const text = Buffer.concat(chunks)
        // `HTTP/1.1 200 OK\r\n`, each `name: value\r\n`, the blank line: the header block as sent.
        let header = `HTTP/${response.httpVersion} ${String(response.statusCode)} ${response.statusMessage ?? ''}\r\n\r\n`.length
        for (let i = 0; i < response.rawHeaders.length; i += 2) header += Buffer.byteLength(`${response.rawHeaders[i]}: ${response.rawHeaders[i + 1]}\r\n`)
        resolve({ status: response.statusCode ?? 0, body: text.toString('utf8'), bytes: { header, body: text.length } })
      })
    })
    outgoing.once('error', reject)
    outgoing.end(body)
  })
}

/** What a load generator reports for one bounded run; the server's CPU is measured around it. */
export interface DriverResult { readonly requests: number, readonly seconds: number, readonly p50: number, readonly p99: number, readonly errors: number }

export type Driver = 'wrk' | 'autocannon'

/** BENCH_DRIVER, else wrk where it is installed: autocannon shares the two cores with the servers and takes a large part of them. */
export function chooseDriver (forced = process.env.BENCH_DRIVER): Driver {
  if (forced === 'wrk' || forced === 'autocannon') return forced
  if (forced !== undefined && forced !== '') throw new Error(`BENCH_DRIVER must be wrk or autocannon, received ${forced}`)
  return hasWrk() ? 'wrk' : 'autocannon'
}

export const driver = chooseDriver()

async function autocannonLoad (origin: string, request: LoadRequest, seconds: number, connections: number): Promise<DriverResult> {
  const result = await autocannon({
    url: origin + request.path,
    ...requestInit(request),
    ...(request.keyed ? { requests: [{ setupRequest: (sent: autocannon.Request) => ({ ...sent, headers: { ...sent.headers, 'idempotency-key': freshKey() } }) }] } : {}),
    connections,
    pipelining: 1,
    duration: seconds,
    timeout: 10
  })
  let unexpected = 0
  for (const [status, stats] of Object.entries(result.statusCodeStats ?? {})) {
    if (Number(status) !== request.status) unexpected += stats.count ?? 0
  }
  return { requests: result.requests.total, seconds: result.duration, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.timeouts + unexpected }
}

/** Loads a server with one request shape for `seconds`, with the chosen driver. */
export async function loadRequest (server: Server, request: LoadRequest, seconds: number, connections: number): Promise<Measurement> {
  const cpuBefore = server.cpuSeconds()
  const result = driver === 'wrk'
    ? await wrkLoad(server.origin, request, seconds, connections)
    : await autocannonLoad(server.origin, request, seconds, connections)
  return {
    rps: result.requests / result.seconds,
    p50: result.p50,
    p99: result.p99,
    errors: result.errors,
    cpuMicros: cpuBefore === undefined || result.requests === 0 ? undefined : ((server.cpuSeconds() as number) - cpuBefore) * 1e6 / result.requests
  }
}

export async function load (server: Server, path: string, benchCase: BenchCase, seconds: number, connections: number): Promise<Measurement> {
  return await loadRequest(server, caseRequest(benchCase, path), seconds, connections)
}

/** Microseconds of this process's CPU per request of `benchCase`, served `count` times through `inject` (no sockets). */
export async function cpuPerRequest (app: FastifyInstance, benchCase: BenchCase, count: number): Promise<number> {
  const request = {
    method: benchCase.method,
    url: benchCase.path,
    headers: { ...commonHeaders, ...benchCase.headers },
    payload: benchCase.body === undefined ? undefined : JSON.stringify(benchCase.body)
  }
  const start = process.cpuUsage()
  for (let i = 0; i < count; i++) {
    const response = await app.inject(request)
    if (response.statusCode !== benchCase.status) throw new Error(`${benchCase.name}: ${response.statusCode} ${response.body}`)
  }
  const used = process.cpuUsage(start)
  return (used.user + used.system) / count
}
