// The wrk driver of harness.ts: one thread, the case's connections, bounded in time. The request
// (method, headers, body, a fresh Idempotency-Key per request for keyed cases) and the counting of
// unexpected statuses are a Lua script written to a temporary file; its `done` hook prints the
// summary as one JSON line, which is all of wrk's output this reads.
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { DriverResult, LoadRequest } from './harness.js'

/** Whether a `wrk` binary is on PATH (Debian: `apt-get install wrk`). */
export function hasWrk (): boolean {
  return spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined
}

/** A Lua long string: no escapes to get wrong, whatever the text holds. */
function luaString (text: string): string {
  let level = ''
  while (text.includes(`]${level}]`)) level += '='
  return `[${level}[${text}]${level}]`
}

let runs = 0

/**
 * The script for one run. A request with a fixed shape is set on `wrk` once, so wrk formats it once;
 * a keyed one is formatted per request with the next key of a counter, prefixed by an id unique to
 * this run (keys are kept by the server, across runs on one database too). Statuses: wrk counts
 * responses of 400 and above by itself (`summary.errors.status`); only a case that expects such a
 * status needs the `response` hook, which makes wrk hand every response to Lua.
 */
export function wrkScript (request: LoadRequest): string {
  const lines = [`wrk.method = ${luaString(request.method)}`]
  for (const [name, value] of Object.entries(request.headers)) lines.push(`wrk.headers[ ${luaString(name)} ] = ${luaString(value)}`)
  if (request.body !== undefined) lines.push(`wrk.body = ${luaString(request.body)}`)
  lines.push('local threads = {}', 'function setup (thread) table.insert(threads, thread) end', 'unexpected = 0')
  if (request.keyed) {
    const runId = `${process.pid}-${Date.now()}-${++runs}`
    lines.push('local counter = 0', `local runId = ${luaString(runId)}`,
      'function request ()', '  counter = counter + 1', '  wrk.headers["idempotency-key"] = \'"bench-\' .. runId .. \'-\' .. counter .. \'"\'', '  return wrk.format()', 'end')
  }
  const countsItself = request.status < 400
  if (!countsItself) lines.push(`function response (status) if status ~= ${request.status} then unexpected = unexpected + 1 end end`)
  lines.push('function done (summary, latency)',
    '  local wrong = 0',
    '  for _, thread in ipairs(threads) do wrong = wrong + thread:get("unexpected") end',
    ...(countsItself ? ['  wrong = summary.errors.status'] : []),
    '  local e = summary.errors',
    '  io.write(string.format(\'{"requests":%d,"microseconds":%d,"p50":%.1f,"p99":%.1f,"socketErrors":%d,"timeouts":%d,"unexpected":%d}\\n\',',
    '    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), e.connect + e.read + e.write, e.timeout, wrong))',
    'end')
  return lines.join('\n') + '\n'
}

interface WrkSummary { requests: number, microseconds: number, p50: number, p99: number, socketErrors: number, timeouts: number, unexpected: number }

export async function wrkLoad (origin: string, request: LoadRequest, seconds: number, connections: number): Promise<DriverResult> {
  const directory = mkdtempSync(join(tmpdir(), 'bench-wrk-'))
  const script = join(directory, 'request.lua')
  writeFileSync(script, wrkScript(request))
  try {
    const output = await run(['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', script, origin + request.path])
    // A Lua error does not make wrk fail: without the done hook's line, say what wrk said.
    const last = output.trimEnd().split('\n').at(-1) ?? ''
    if (!last.startsWith('{')) throw new Error(`wrk gave no summary:\n${output}`)
    const summary = JSON.parse(last) as WrkSummary
    return {
      requests: summary.requests,
      seconds: summary.microseconds / 1e6,
      p50: summary.p50 / 1000,
      p99: summary.p99 / 1000,
      errors: summary.socketErrors + summary.timeouts + summary.unexpected
    }
  } finally {
    rmSync(directory, { recursive: true, force: true })
  }
}

function run (args: readonly string[]): Promise<string> {
  const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'inherit'] })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', code => { if (code === 0) resolve(output); else reject(new Error(`wrk exited with ${String(code)}:\n${output}`)) })
  })
}
