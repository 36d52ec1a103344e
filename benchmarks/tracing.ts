// What tracing costs a request (docs/metrics.md "Tracing"): the CPU time of one request served
// in-process through `inject`, the demo's configuration with `tracing` on (the default, as
// @opentelemetry/api is installed here) and off, taking turns round after round; medians in µs.
// `--sdk` registers the OpenTelemetry Node SDK first (a BatchSpanProcessor, as in production), recording every span into an exporter that
// drops them: the price with a host's SDK sampling everything, before any export.
// Usage, after `npx tsc -p benchmarks/tsconfig.json`: node dist/benchmarks/tracing.js [--sdk] [--quick]
import type { FastifyInstance } from 'fastify'
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import { cases } from './cases.js'
import { cpuPerRequest, median } from './harness.js'
import { benchConfig, buildPluginApp, seededMemoryStore } from './server.js'

const quick = process.argv.includes('--quick')
const withSdk = process.argv.includes('--sdk')
if (withSdk) {
  const dropping = { export: (_spans: unknown[], done: (result: { code: 0 }) => void) => done({ code: 0 }), shutdown: async () => {} }
  new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropping)] }).register()
}

const rounds = quick ? 4 : 20
const count = quick ? 300 : 1000
const config = benchConfig({})
const apps = new Map<string, FastifyInstance>()
for (const [name, tracing] of [['tracing on', true], ['tracing off', false]] as const) {
  apps.set(name, await buildPluginApp(config, await seededMemoryStore(), { tracing }))
}
for (const benchCase of cases.filter(c => c.name === 'retrieve' || c.name === 'list-20')) {
  const samples = new Map<string, number[]>([...apps.keys()].map(name => [name, []]))
  for (const app of apps.values()) await cpuPerRequest(app, benchCase, count)
  // Which goes first alternates: the one after inherits the other's garbage.
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? [...apps] : [...apps].reverse()
    for (const [name, app] of order) samples.get(name)?.push(await cpuPerRequest(app, benchCase, count))
  }
  const [on, off] = [median(samples.get('tracing on') ?? []), median(samples.get('tracing off') ?? [])]
  process.stdout.write(`${benchCase.name.padEnd(10)} ${withSdk ? 'SDK' : 'no SDK'}: tracing on ${on.toFixed(1)} µs, off ${off.toFixed(1)} µs (${(on - off).toFixed(1)} µs, ×${(on / off).toFixed(3)}; medians of ${rounds} rounds of ${count})\n`)
}
for (const app of apps.values()) await app.close()
