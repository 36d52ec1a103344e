// What each convention costs per request: the CPU time of one request served
// in-process through `inject` (no sockets, so no kernel time; CPU time rather than elapsed time,
// so other processes competing for the two cores barely change it),
// for the baseline, the demo's plugin configuration, and the plugin with conventions (or the
// application rules) turned off one at a time. Variants take turns, round after round; medians in microseconds per request.
// With --http, each variant is a server process under the load generator instead (overHttp).
// Usage, after `npx tsc -p benchmarks/tsconfig.json`: node dist/benchmarks/ablation.js [--http] [--quick] [--cases retrieve,create]
import type { FastifyInstance } from 'fastify'
import { buildBaselineApp } from './baseline.js'
import { cases } from './cases.js'
import type { BenchCase } from './cases.js'
import { cpuPerRequest, load, median, startServer } from './harness.js'
import type { Server } from './harness.js'
import { ablations, benchConfig, buildPluginApp, seededMemoryStore } from './server.js'

const variants = ['plugin (demo)', ...Object.keys(ablations)]
// The token case needs a walk to its token; the filtered LIST is all store work. `--cases a,b` picks.
const picked = process.argv.includes('--cases') ? process.argv[process.argv.indexOf('--cases') + 1].split(',') : undefined
// A keyed case repeats its key here: replays, not the first tries it measures in run.ts.
const measured = cases.filter(c => c.tokenDepth === undefined && c.keyed !== true && c.name !== 'list-filter-sort-fields' && (picked?.includes(c.name) ?? true))

export interface AblationResult {
  /** Median microseconds per request, by case then variant. */
  readonly micros: Readonly<Record<string, Readonly<Record<string, number>>>>
}

/** Median of each variant's samples, printed as one line of the case. */
function report (benchCase: BenchCase, samples: ReadonlyMap<string, number[]>): Record<string, number> {
  const medians = Object.fromEntries([...samples].map(([name, list]) => [name, median(list)]))
  process.stdout.write(`${benchCase.name.padEnd(14)} ${Object.entries(medians).map(([name, us]) => `${name} ${us.toFixed(1)} µs`).join('  ')}\n`)
  return medians
}

/** In-process, through inject: no sockets, so no kernel time, but the whole request path. */
async function inProcess (rounds: number, count: number): Promise<AblationResult> {
  const config = benchConfig({})
  const apps = new Map<string, FastifyInstance>([['baseline', await buildBaselineApp()]])
  for (const name of variants) {
    const store = await seededMemoryStore()
    apps.set(name, await buildPluginApp(config, store, ablations[name]?.(store) ?? {}))
  }
  const micros: Record<string, Record<string, number>> = {}
  for (const benchCase of measured) {
    const samples = new Map<string, number[]>([...apps.keys()].map(name => [name, []]))
    for (const app of apps.values()) await cpuPerRequest(app, benchCase, count / 3)
    for (let round = 0; round < rounds; round++) {
      for (const [name, app] of apps) samples.get(name)?.push(await cpuPerRequest(app, benchCase, count))
    }
    micros[benchCase.name] = report(benchCase, samples)
  }
  for (const app of apps.values()) await app.close()
  return { micros }
}

/**
 * Over HTTP with the benchmark's load generator: each variant a server process of its own
 * (server.ts with BENCH_ABLATE), beside the baseline sending the plugin's headers; server CPU µs
 * per response, which other processes on the machine barely move. Variants take turns each round.
 */
async function overHttp (rounds: number, seconds: number): Promise<AblationResult> {
  const sides: Array<readonly [string, string, Record<string, string>]> = [
    ['baseline with headers', './baseline.js', { BASELINE_HEADERS: 'plugin' }],
    ...variants.map(name => [name, './server.js', name in ablations ? { BENCH_ABLATE: name } : {}] as [string, string, Record<string, string>])
  ]
  const micros: Record<string, Record<string, number>> = {}
  for (const benchCase of measured) {
    const servers = new Map<string, Server>()
    for (const [name, script, env] of sides) servers.set(name, await startServer(script, 'memory', [], env) as Server)
    for (const server of servers.values()) await load(server, benchCase.path, benchCase, 1, 10)
    const samples = new Map<string, number[]>([...servers.keys()].map(name => [name, []]))
    for (let round = 0; round < rounds; round++) {
      for (const [name, server] of servers) samples.get(name)?.push((await load(server, benchCase.path, benchCase, seconds, 10)).cpuMicros ?? NaN)
    }
    for (const server of servers.values()) await server.stop()
    micros[benchCase.name] = report(benchCase, samples)
  }
  return { micros }
}

async function main () {
  const quick = process.argv.includes('--quick')
  const result = process.argv.includes('--http')
    ? await overHttp(quick ? 2 : 5, quick ? 1 : 3)
    : await inProcess(quick ? 2 : 5, quick ? 300 : 1500)
  process.stdout.write(JSON.stringify(result) + '\n')
}

await main()
