// `npm run bench` (benchmarks/README.md "Method"): for each case and store, a fresh plugin server,
// fresh baseline servers and, where the case has one, a fresh peer server (peers.ts); answers
// compared, a warm-up, then load by wrk or autocannon over loopback, the sides alternately for
// several rounds. Prints one line per case, then runs the
// micro-benchmarks and the paging benchmark, writes the results JSON and renders the chart.
// Only ratios within one run mean anything: both sides share two cores with the load generator.
import { spawn } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { fileURLToPath } from 'node:url'
import { cases } from './cases.js'
import type { BenchCase, StoreKind } from './cases.js'
import { renderChart } from './chart.js'
import type { SerializeResult } from './micro/serialize.js'
import type { FilterParseResult } from './micro/filter-parse.js'
import type { PagingResult } from './paging.js'
import type { PostgresPagingResult } from './paging-postgres.js'
import { answer, caseRequest, driver, here, load, loadRequest, median, probe, startServer, tokenAt } from './harness.js'
import { attachedReplicas, databaseUrl, dropBenchSchema, seedPostgres } from './postgres.js'
import type { Measurement, ResponseBytes, Server } from './harness.js'
import { peers } from './peers.js'
import type { PeerRequest } from './peers.js'

const quick = process.env.BENCH_QUICK === '1'
const number = (name: string, fallback: number) => process.env[name] === undefined ? fallback : Number(process.env[name])
const settings = {
  quick,
  driver,
  /** Seconds per measurement, per side and round. */
  duration: number('BENCH_DURATION', quick ? 1 : 3),
  /** Seconds of load on each side before the measured rounds. */
  warmup: number('BENCH_WARMUP', quick ? 1 : 2),
  rounds: number('BENCH_ROUNDS', quick ? 2 : 3),
  connections: number('BENCH_CONNECTIONS', 10),
  stores: (process.env.BENCH_STORES ?? 'memory,postgres').split(',') as StoreKind[],
  /** Only cases whose `store/name` matches this regular expression. */
  only: new RegExp(process.env.BENCH_CASES ?? '.')
}

// Compiled to dist/benchmarks/; results live in the source tree, beside this file's source.
const resultsDir = fileURLToPath(new URL('../../benchmarks/results/', import.meta.url))

interface CaseResult {
  readonly store: StoreKind
  readonly name: string
  readonly description: string
  readonly target: number | null
  readonly baseline: readonly Measurement[]
  readonly plugin: readonly Measurement[]
  readonly baselineRps: number
  readonly pluginRps: number
  /** Median of the per-round ratios: each round's two measurements are neighbours in time. */
  readonly ratio: number
  /** Median per-round baseline ÷ plugin server CPU per response: the same question, far less sensitive to noise. */
  readonly cpuRatio: number | null
  readonly p50: number
  readonly p99: number
  readonly errors: number
  /** Both sides answered the same status, headers and body (tokens and new ids masked). */
  readonly sameAnswer: boolean
  readonly mismatch?: { baseline: string, plugin: string }
  /** Both sides ran the same SQL statements (true where there is no SQL). */
  readonly sameSql: boolean
  readonly differentSql?: { baseline: readonly string[], plugin: readonly string[] }
  /**
   * The baseline again, sending the plugin's response headers too (baseline.ts, BASELINE_HEADERS):
   * `headersCeiling` is its ratio to the plain baseline (what those bytes alone cost), `ratioToHeaders`
   * the plugin's ratio to it (what the plugin costs beyond them). Reported; the targets stay on `ratio`.
   */
  readonly withHeaders: readonly Measurement[]
  readonly headersCeiling: number
  readonly ratioToHeaders: number
  /** Header block and body of one response, per side (peers.ts: the peer's answer has a shape of its own). */
  readonly bytes: Readonly<Record<'baseline' | 'plugin' | 'withHeaders', ResponseBytes>> & { readonly peer?: ResponseBytes }
  /** The peer's equivalent request, where the case has one on this store and the peer is installed. */
  readonly peer?: PeerResult
}

interface PeerResult {
  readonly name: string
  readonly measurements: readonly Measurement[]
  readonly rps: number
  /** The demo as `npm start` serves it (server.ts BENCH_DEMO): the side compared with the peer, in the same rounds. */
  readonly demo: readonly Measurement[]
  readonly demoRps: number
  /** Demo ÷ peer req/s, median of the per-round ratios. */
  readonly ratio: number
  /** Errors of the peer and of the demo side. */
  readonly errors: number
  /** The demo side answered as the plugin side did (status, headers, body). */
  readonly demoSameAnswer: boolean
  /** The peer answered the expected status with the expected records (the same book, the same 20 ids). */
  readonly expected: boolean
  readonly answer?: string
}

interface Sides { readonly baseline: Server, readonly plugin: Server, readonly withHeaders: Server }
interface PeerSide { readonly name: string, readonly server: Server, readonly request: PeerRequest, readonly demo: Server }

/** Whether the peer's answer has the status and the records the case expects; the answer itself when not. */
async function checkPeer (peer: PeerSide): Promise<{ expected: boolean, answer: string, bytes: ResponseBytes }> {
  const { status, body, bytes } = await probe(peer.server.origin, peer.request)
  let parsed: unknown = null
  try { parsed = JSON.parse(body) } catch {}
  return { expected: status === peer.request.status && peer.request.holdsExpected(parsed), answer: `${status}\n${body.slice(0, 2000)}`, bytes }
}

async function runCase (store: StoreKind, benchCase: BenchCase, servers: Sides, peer?: PeerSide): Promise<CaseResult> {
  const { baseline, plugin, withHeaders } = servers
  // Each side walks to its own token: how a token binds to its query is each side's business.
  const pathOn = async (server: Server) => benchCase.tokenDepth === undefined
    ? benchCase.path
    : benchCase.path.replace('{token}', await tokenAt(server.origin, benchCase.tokenDepth))
  const paths = { baseline: await pathOn(baseline), plugin: await pathOn(plugin), withHeaders: await pathOn(withHeaders) }
  const baselineAnswer = await answer(baseline.origin, paths.baseline, benchCase)
  const pluginAnswer = await answer(plugin.origin, paths.plugin, benchCase)
  const withHeadersAnswer = await answer(withHeaders.origin, paths.withHeaders, benchCase)
  const bytes = {
    baseline: (await probe(baseline.origin, caseRequest(benchCase, paths.baseline))).bytes,
    plugin: (await probe(plugin.origin, caseRequest(benchCase, paths.plugin))).bytes,
    withHeaders: (await probe(withHeaders.origin, caseRequest(benchCase, paths.withHeaders))).bytes
  }
  const peerCheck = peer === undefined ? undefined : await checkPeer(peer)
  const demoAnswer = peer === undefined ? undefined : await answer(peer.demo.origin, paths.plugin, benchCase)
  for (const side of ['baseline', 'plugin', 'withHeaders'] as const) await load(servers[side], paths[side], benchCase, settings.warmup, settings.connections)
  if (peer !== undefined) {
    await load(peer.demo, paths.plugin, benchCase, settings.warmup, settings.connections)
    await loadRequest(peer.server, peer.request, settings.warmup, settings.connections)
  }
  const sides = { baseline: [] as Measurement[], plugin: [] as Measurement[], withHeaders: [] as Measurement[] }
  const peerRounds: Measurement[] = []
  const demoRounds: Measurement[] = []
  for (let round = 0; round < settings.rounds; round++) {
    for (const side of ['baseline', 'plugin', 'withHeaders'] as const) sides[side].push(await load(servers[side], paths[side], benchCase, settings.duration, settings.connections))
    if (peer !== undefined) {
      demoRounds.push(await load(peer.demo, paths.plugin, benchCase, settings.duration, settings.connections))
      peerRounds.push(await loadRequest(peer.server, peer.request, settings.duration, settings.connections))
    }
  }
  // PostgreSQL: the statements on the data each side ran during the whole case, as sets (the plugin
  // may run one twice); the store's own bookkeeping (schema check, migration) is left out.
  const onData = (server: Server) => [...new Set(server.statements.filter(text => text.includes(' AS "t0"')))].sort()
  const differentSql = onData(plugin).join('\n') === onData(baseline).join('\n') ? undefined : { baseline: onData(baseline), plugin: onData(plugin) }
  const sameAnswer = baselineAnswer === pluginAnswer && withHeadersAnswer === baselineAnswer
  return {
    store,
    name: benchCase.name,
    description: benchCase.description,
    target: benchCase.targets?.[store] ?? null,
    ...sides,
    baselineRps: median(sides.baseline.map(m => m.rps)),
    pluginRps: median(sides.plugin.map(m => m.rps)),
    ratio: median(sides.plugin.map((m, i) => m.rps / sides.baseline[i].rps)),
    cpuRatio: sides.plugin.every(m => m.cpuMicros !== undefined) ? median(sides.plugin.map((m, i) => (sides.baseline[i].cpuMicros as number) / (m.cpuMicros as number))) : null,
    p50: median(sides.plugin.map(m => m.p50)),
    p99: median(sides.plugin.map(m => m.p99)),
    errors: [...sides.baseline, ...sides.plugin].reduce((sum, m) => sum + m.errors, 0),
    sameAnswer,
    ...(sameAnswer ? {} : { mismatch: { baseline: baselineAnswer, plugin: pluginAnswer } }),
    sameSql: differentSql === undefined,
    ...(differentSql === undefined ? {} : { differentSql }),
    headersCeiling: median(sides.withHeaders.map((m, i) => m.rps / sides.baseline[i].rps)),
    ratioToHeaders: median(sides.plugin.map((m, i) => m.rps / sides.withHeaders[i].rps)),
    bytes: { ...bytes, ...(peerCheck === undefined ? {} : { peer: peerCheck.bytes }) },
    ...(peer === undefined || peerCheck === undefined
      ? {}
      : {
          peer: {
            name: peer.name,
            measurements: peerRounds,
            rps: median(peerRounds.map(m => m.rps)),
            demo: demoRounds,
            demoRps: median(demoRounds.map(m => m.rps)),
            ratio: median(demoRounds.map((m, i) => m.rps / peerRounds[i].rps)),
            errors: [...peerRounds, ...demoRounds].reduce((sum, m) => sum + m.errors, 0),
            demoSameAnswer: demoAnswer === pluginAnswer,
            expected: peerCheck.expected,
            ...(peerCheck.expected ? {} : { answer: peerCheck.answer })
          }
        })
  }
}

const columns = [32, 16, 14, 8, 8, 8, 8, 11, 13, 11, 12, 12, 11, 14, 14, 14, 14]
const row = (cells: readonly string[]) => cells.map((cell, i) => i === 0 ? cell.padEnd(columns[i]) : cell.padStart(columns[i])).join('')

/** `body/header` bytes of one response. */
const weight = (bytes: ResponseBytes | undefined) => bytes === undefined ? '-' : `${bytes.body}/${bytes.header}`

function line (result: CaseResult): string {
  const notes = [
    result.target !== null && result.ratio < result.target ? `below target ${result.target.toFixed(2)}` : '',
    result.sameAnswer ? '' : 'ANSWERS DIFFER',
    result.sameSql ? '' : 'SQL DIFFERS',
    result.peer === undefined || result.peer.expected ? '' : 'PEER ANSWER UNEXPECTED',
    result.peer === undefined || result.peer.errors === 0 ? '' : `peer or demo errors ${result.peer.errors}`,
    result.peer === undefined || result.peer.demoSameAnswer ? '' : 'demo answers otherwise than the plugin side'
  ].filter(note => note !== '').join(', ')
  return row([`${result.store}/${result.name}`, result.baselineRps.toFixed(0), result.pluginRps.toFixed(0), result.ratio.toFixed(2),
    result.p50.toFixed(1), result.p99.toFixed(1), String(result.errors), result.cpuRatio?.toFixed(2) ?? '-',
    result.headersCeiling.toFixed(2), result.ratioToHeaders.toFixed(2), result.peer?.demoRps.toFixed(0) ?? '-', result.peer?.rps.toFixed(0) ?? '-', result.peer?.ratio.toFixed(2) ?? '-',
    ...(['baseline', 'plugin', 'withHeaders', 'peer'] as const).map(side => weight(result.bytes[side]))]) + (notes === '' ? '' : `  ${notes}`)
}

/** Runs a compiled micro-benchmark script, which prints its results as one JSON line last. */
function runScript (script: string, args: readonly string[] = []): Promise<unknown> {
  const child = spawn(process.execPath, [here(script), ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: process.env })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  return new Promise((resolve, reject) => {
    child.once('exit', code => {
      const lines = output.trimEnd().split('\n')
      process.stdout.write(lines.slice(0, -1).map(text => `${text}\n`).join(''))
      if (code !== 0) reject(new Error(`${script} exited with ${String(code)}`))
      else resolve(JSON.parse(lines[lines.length - 1]))
    })
  })
}

async function main () {
  const started = Date.now()
  process.stdout.write(`node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}; ${settings.rounds} rounds of ${settings.duration} s after ${settings.warmup} s warm-up, ${settings.connections} connections, ${settings.driver}\n`)
  process.stdout.write(`peers: ${settings.stores.map(store => `${store} ${peers[store].name}`).join('; ')}; bytes per response: body/header\n\n`)
  process.stdout.write(row(['case', 'baseline req/s', 'plugin req/s', 'ratio', 'p50 ms', 'p99 ms', 'errors', 'cpu ratio', 'hdr ceiling', 'vs hdr', 'demo req/s', 'peer req/s', 'demo÷peer',
    'bytes base', 'bytes plugin', 'bytes hdr', 'bytes peer']) + '\n')
  const results: CaseResult[] = []
  const skipped: Array<{ store: StoreKind, reason: string }> = []
  /** The PostgreSQL server's streaming replicas (null: no PostgreSQL case ran). */
  let replicas: number | null = null
  /** Stores whose peer is not installed (or cannot start): told once, then left out. */
  const peerMissing = new Set<StoreKind>()
  for (const store of settings.stores) {
    const selected = cases.filter(c => c.stores.includes(store) && settings.only.test(`${store}/${c.name}`))
    if (selected.length === 0) continue
    if (store === 'postgres') {
      if (databaseUrl() === undefined) {
        skipped.push({ store, reason: 'DATABASE_URL is not set' })
        process.stdout.write('postgres: skipped (DATABASE_URL is not set)\n')
        continue
      }
      const seeding = Date.now()
      await seedPostgres()
      process.stdout.write(`postgres: seeded in ${((Date.now() - seeding) / 1000).toFixed(0)} s\n`)
      replicas = await attachedReplicas()
      if (replicas > 0) process.stdout.write(`postgres: ${replicas} streaming replica(s) attached: each write is replayed there too, on this machine's cores when local (README "The database server")\n`)
    }
    for (const benchCase of selected) {
      const plugin = await startServer('./server.js', store)
      if ('unavailable' in plugin) {
        skipped.push({ store, reason: plugin.unavailable })
        process.stdout.write(`${store}: skipped (${plugin.unavailable})\n`)
        break
      }
      const baseline = await startServer('./baseline.js', store)
      const withHeaders = await startServer('./baseline.js', store, [], { BASELINE_HEADERS: 'plugin' })
      const peerRequest = peerMissing.has(store) ? undefined : peers[store].requests[benchCase.name]
      const peerServer = peerRequest === undefined ? undefined : await startServer(peers[store].script, store)
      if (peerServer !== undefined && 'unavailable' in peerServer) {
        peerMissing.add(store)
        skipped.push({ store, reason: `peer ${peers[store].name}: ${peerServer.unavailable}` })
        process.stdout.write(`${store}: peer ${peers[store].name} skipped (${peerServer.unavailable})\n`)
      }
      const peerReady = peerServer === undefined || 'unavailable' in peerServer || peerRequest === undefined ? undefined : { name: peers[store].name, server: peerServer, request: peerRequest }
      // Compared with the peer: the demo as `npm start` serves it, on the same store.
      const demo = peerReady === undefined ? undefined : await startServer('./server.js', store, [], { BENCH_DEMO: '1' })
      if (demo !== undefined && 'unavailable' in demo) throw new Error(`the demo side did not start: ${demo.unavailable}`)
      const peer = peerReady === undefined || demo === undefined ? undefined : { ...peerReady, demo }
      try {
        if ('unavailable' in baseline || 'unavailable' in withHeaders) throw new Error(`the baseline has no ${store} store`)
        const result = await runCase(store, benchCase, { baseline, plugin, withHeaders }, peer)
        results.push(result)
        process.stdout.write(line(result) + '\n')
        if (result.mismatch !== undefined) process.stdout.write(`  baseline:\n${result.mismatch.baseline}\n  plugin:\n${result.mismatch.plugin}\n`)
        if (result.peer?.answer !== undefined) process.stdout.write(`  peer:\n${result.peer.answer}\n`)
        if (result.differentSql !== undefined) process.stdout.write(`  baseline SQL:\n    ${result.differentSql.baseline.join('\n    ')}\n  plugin SQL:\n    ${result.differentSql.plugin.join('\n    ')}\n`)
      } finally {
        await plugin.stop()
        if (!('unavailable' in baseline)) await baseline.stop()
        if (!('unavailable' in withHeaders)) await withHeaders.stop()
        await peer?.server.stop()
        await peer?.demo.stop()
      }
    }
    if (store === 'postgres') await dropBenchSchema()
  }

  const quickArgs = quick ? ['--quick'] : []
  process.stdout.write('\n')
  const micro = process.env.BENCH_SKIP_MICRO === '1'
    ? null
    : {
        serialize: await runScript('./micro/serialize.js', quickArgs) as SerializeResult,
        filterParse: await runScript('./micro/filter-parse.js', quickArgs) as FilterParseResult,
        paging: await runScript('./paging.js', quickArgs) as PagingResult,
        pagingPostgres: databaseUrl() === undefined ? null : await runScript('./paging-postgres.js', quickArgs) as PostgresPagingResult
      }

  const report = {
    date: new Date().toISOString(),
    node: process.version,
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? 'unknown', memoryGiB: Math.round(totalmem() / 2 ** 30) },
    settings: { ...settings, only: settings.only.source },
    postgresReplicas: replicas,
    seconds: Math.round((Date.now() - started) / 1000),
    cases: results,
    skipped,
    micro
  }
  mkdirSync(resultsDir, { recursive: true })
  const name = quick ? 'quick' : 'latest'
  writeFileSync(`${resultsDir}${name}.json`, JSON.stringify(report, null, 2) + '\n')
  if (!quick) writeFileSync(`${resultsDir}ratios.svg`, await renderChart(report))
  process.stdout.write(`\nwrote benchmarks/results/${name}.json${quick ? '' : ' and ratios.svg'} in ${report.seconds} s\n`)
  // Every response must have been the intended one, on every side, with the same bytes on the plugin's and the baselines'.
  // A peer must have answered what was asked, or its rate compares nothing.
  if (results.some(result => result.errors > 0 || !result.sameAnswer || !result.sameSql || (result.peer !== undefined && (!result.peer.expected || result.peer.errors > 0 || !result.peer.demoSameAnswer)))) process.exitCode = 1
}

await main()
