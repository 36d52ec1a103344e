// What each convention costs per request: the CPU time of one request served
// in-process through `inject` (no sockets, so no kernel time; CPU time rather than elapsed time,
// so other processes competing for the two cores barely change it),
// for the baseline, the demo's plugin configuration, and the plugin with conventions (or the
// application rules) turned off one at a time. Variants take turns, round after round; medians in microseconds per request.
// Usage, after `npx tsc -p benchmarks/tsconfig.json`: node dist/benchmarks/ablation.js [--quick] [--cases retrieve,create]
import type { FastifyInstance } from 'fastify'
import type { ApiConventionsOptions, Store } from '../lib/index.js'
import { demoResources } from '../demo/schemas/index.js'
import { buildBaselineApp } from './baseline.js'
import { cases, commonHeaders } from './cases.js'
import { benchConfig, buildPluginApp, seededMemoryStore } from './server.js'

/**
 * The demo's resources with no application rules configured (no row or field rules, server values
 * or hooks): what the rules machinery costs requests that no rule concerns. Its CREATE answers
 * without the books' reviewCount and averageRating, which the demo's server values set.
 */
function withoutRules (store: Store): Partial<ApiConventionsOptions> {
  return { resources: demoResources(store).map(({ rules: _rules, serverValues: _values, hooks: _hooks, ...definition }) => definition) }
}

const variants: ReadonlyArray<readonly [string, ((store: Store) => Partial<ApiConventionsOptions>) | null]> = [
  ['baseline', null],
  ['plugin (demo)', () => ({})],
  ['no rules', withoutRules],
  // What the Idempotency-Key wrapper costs requests that send no key.
  ['no idempotency', () => ({ idempotency: false })],
  ['no rate limit', () => ({ rateLimit: false })],
  ['no auth', () => ({ auth: undefined })],
  ['no auth, cors, rate limit', () => ({ auth: undefined, cors: undefined, rateLimit: false })]
]
// The token case needs a walk to its token; the filtered LIST is all store work. `--cases a,b` picks.
const picked = process.argv.includes('--cases') ? process.argv[process.argv.indexOf('--cases') + 1].split(',') : undefined
// A keyed case repeats its key here: replays, not the first tries it measures in run.ts.
const measured = cases.filter(c => c.tokenDepth === undefined && c.keyed !== true && c.name !== 'list-filter-sort-fields' && (picked?.includes(c.name) ?? true))

export interface AblationResult {
  /** Median microseconds per request, by case then variant. */
  readonly micros: Readonly<Record<string, Readonly<Record<string, number>>>>
}

async function perRequest (app: FastifyInstance, benchCase: typeof cases[number], count: number): Promise<number> {
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

async function main () {
  const quick = process.argv.includes('--quick')
  const [count, rounds] = quick ? [300, 2] : [1500, 5]
  const config = benchConfig({})
  const apps = new Map<string, FastifyInstance>()
  for (const [name, overrides] of variants) {
    if (overrides === null) {
      apps.set(name, await buildBaselineApp())
    } else {
      const store = await seededMemoryStore()
      apps.set(name, await buildPluginApp(config, store, overrides(store)))
    }
  }
  const micros: Record<string, Record<string, number>> = {}
  for (const benchCase of measured) {
    const samples = new Map<string, number[]>(variants.map(([name]) => [name, []]))
    for (const app of apps.values()) await perRequest(app, benchCase, count / 3)
    for (let round = 0; round < rounds; round++) {
      for (const [name, app] of apps) samples.get(name)?.push(await perRequest(app, benchCase, count))
    }
    micros[benchCase.name] = Object.fromEntries([...samples].map(([name, list]) => [name, list.sort((a, b) => a - b)[list.length >> 1]]))
    process.stdout.write(`${benchCase.name.padEnd(14)} ${Object.entries(micros[benchCase.name]).map(([name, us]) => `${name} ${us.toFixed(1)} µs`).join('  ')}\n`)
  }
  for (const app of apps.values()) await app.close()
  process.stdout.write(JSON.stringify({ micros } satisfies AblationResult) + '\n')
}

await main()
