// Profiles the plugin side (or the baseline, to compare) under one case's load: starts
// benchmarks/server.ts with `node --cpu-prof`, loads it with autocannon, stops it, and prints the
// functions with the most self time and the plugin's (lib/) functions with the most total time. The
// .cpuprofile is kept for a flame graph (Chrome DevTools → Performance, or speedscope).
// Usage, after `npx tsc -p benchmarks/tsconfig.json`: `node dist/benchmarks/profile.js <case name> [seconds] [plugin|baseline|demo]`,
// with STORE=postgres (and DATABASE_URL) for PostgreSQL; `demo` is the side compared with the peers (server.ts BENCH_DEMO).
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { cases } from './cases.js'
import { load, startServer, tokenAt } from './harness.js'
import { seedPostgres } from './postgres.js'

interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string, readonly url: string, readonly lineNumber: number }
  readonly children?: readonly number[]
}
interface CpuProfile { readonly nodes: readonly ProfileNode[], readonly samples: readonly number[], readonly timeDeltas: readonly number[] }

/** `function (file:line)`, with paths shortened to what follows the repository or node_modules. */
function label (node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame
  const file = url.replace(/^file:\/\/.*?\/(dist\/|node_modules\/)/, '$1')
  return `${functionName === '' ? '(anonymous)' : functionName} ${file === '' ? '' : `(${file}:${lineNumber + 1})`}`.trim()
}

/** Where a function lives: a plugin file, a package, a Node module, or the VM itself (GC, native). */
function component (node: ProfileNode): string {
  const { url, functionName } = node.callFrame
  const lib = /\/dist\/(lib\/.*)$/.exec(url)
  if (lib !== null) return lib[1]
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (modules !== null) return modules[1]
  if (url.startsWith('node:')) return url
  return url === '' ? functionName : url
}

export function summarize (profile: CpuProfile) {
  const byId = new Map(profile.nodes.map(node => [node.id, node]))
  const parent = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const stack = (id: number) => {
    const nodes: ProfileNode[] = []
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) nodes.push(byId.get(at) as ProfileNode)
    return nodes
  }
  const self = new Map<string, number>()
  const selfByComponent = new Map<string, number>()
  const total = new Map<string, number>()
  const add = (map: Map<string, number>, key: string, delta: number) => map.set(key, (map.get(key) ?? 0) + delta)
  let all = 0
  // Start-up (seeding, compiling schemas) is not what we measure: count from the first HTTP request on.
  let serving = false
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0
    const nodes = stack(id)
    serving ||= nodes.some(node => node.callFrame.functionName === 'parserOnHeadersComplete')
    if (!serving) return
    all += delta
    add(self, label(nodes[0]), delta)
    add(selfByComponent, component(nodes[0]), delta)
    for (const name of new Set(nodes.map(label))) add(total, name, delta)
  })
  const busy = (name: string) => !name.startsWith('(idle)') && !name.startsWith('(program)')
  const top = (map: Map<string, number>, keep: (name: string) => boolean, count: number) =>
    [...map].filter(([name]) => keep(name)).sort((a, b) => b[1] - a[1]).slice(0, count).map(([name, time]) => ({ name, share: time / all }))
  return {
    self: top(self, busy, 30),
    components: top(selfByComponent, busy, 40),
    idle: (self.get('(idle)') ?? 0) / all,
    lib: top(total, name => name.includes('dist/lib/'), 30)
  }
}

function print (summary: ReturnType<typeof summarize>) {
  const percent = (share: number) => `${(share * 100).toFixed(1).padStart(5)}%`
  process.stdout.write(`idle ${percent(summary.idle)}\n\nself time\n`)
  for (const entry of summary.self) process.stdout.write(`${percent(entry.share)}  ${entry.name}\n`)
  process.stdout.write('\nself time by file or package\n')
  for (const entry of summary.components) process.stdout.write(`${percent(entry.share)}  ${entry.name}\n`)
  process.stdout.write('\ntotal time, plugin functions (hooks that call the next hook include it)\n')
  for (const entry of summary.lib) process.stdout.write(`${percent(entry.share)}  ${entry.name}\n`)
}

const read = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as CpuProfile

async function main () {
  const [name, secondsText, side = 'plugin'] = process.argv.slice(2)
  // A saved profile: summarize it again.
  if (name?.endsWith('.cpuprofile')) return print(summarize(read(name)))
  const benchCase = cases.find(c => c.name === name)
  if (benchCase === undefined || !['plugin', 'baseline', 'demo'].includes(side)) {
    throw new Error(`usage: [STORE=postgres] profile.js <${cases.map(c => c.name).join('|')}> [seconds] [plugin|baseline|demo], or profile.js <file.cpuprofile>`)
  }
  const directory = mkdtempSync(join(tmpdir(), 'bench-profile-'))
  const store = process.env.STORE === 'postgres' ? 'postgres' : 'memory'
  if (store === 'postgres') await seedPostgres()
  const server = await startServer(side === 'baseline' ? './baseline.js' : './server.js', store, ['--cpu-prof', `--cpu-prof-dir=${directory}`], side === 'demo' ? { BENCH_DEMO: '1' } : {})
  if ('unavailable' in server) throw new Error(server.unavailable)
  const path = benchCase.tokenDepth === undefined ? benchCase.path : benchCase.path.replace('{token}', await tokenAt(server.origin, benchCase.tokenDepth))
  const measured = await load(server, path, benchCase, Number(secondsText ?? 10), 10)
  await server.stop()
  const file = join(directory, readdirSync(directory).find(f => f.endsWith('.cpuprofile')) as string)
  process.stdout.write(`${name} on the ${side}: ${measured.rps.toFixed(0)} req/s under the profiler, ${measured.cpuMicros?.toFixed(0) ?? '?'} µs CPU per response, ${measured.errors} errors\nprofile: ${file}\n`)
  print(summarize(read(file)))
}

await main()
