// Numbers to operate the API, for Prometheus (through prom-client, an optional peer dependency):
// requests by route, method and status with their durations, the stores' connection pools,
// rate-limit refusals and Idempotency-Key replays. Off unless the `metrics` option is given; the
// host serves them where it chooses, outside the API (docs/metrics.md).
import type { FastifyReply, FastifyRequest, onResponseHookHandler, RouteOptions } from 'fastify'
import { OptionsInvalidError } from './errors.js'
import { importOptional } from './optional.js'
import { knownKeys, refuseUnknownKeys } from './options-check.js'
import type { PoolStats, Store } from './stores/store.js'
import { kMetricsCollector as kCollector } from './symbols.js'

/** A prom-client `Registry`, as the metrics use it (declared here so that the types need no prom-client). */
export interface MetricsRegistry {
  metrics (): Promise<string>
  readonly contentType: string
}

type Labels = Record<string, string>
interface MetricConfig { name: string, help: string, labelNames: string[], registers: MetricsRegistry[] }
interface Counter { inc (labels: Labels): void }
interface Histogram { observe (labels: Labels, value: number): void }
interface Gauge { set (labels: Labels, value: number): void, reset (): void }

/** The part of prom-client used. */
interface PromClient {
  Registry: new () => MetricsRegistry
  Counter: new (config: MetricConfig) => Counter
  Histogram: new (config: MetricConfig & { buckets?: number[] }) => Histogram
  Gauge: new (config: MetricConfig & { collect: (this: Gauge) => void }) => Gauge
}

export interface MetricsOptions {
  /** A prom-client `Registry` of your own to add the metrics to. Default: a new one, `metrics.registry`. */
  readonly registry?: MetricsRegistry | undefined
  /** Upper bounds of the request duration buckets, in seconds. Default prom-client's (5 ms to 10 s). */
  readonly buckets?: readonly number[] | undefined
}

/** What the plugin does with the metrics: one observer per route, and the stores whose pools are read. */
export interface MetricsCollector {
  observerFor (route: RouteOptions): onResponseHookHandler
  /** Reads `stores`' pools until the returned function is called (when the plugin's instance closes). */
  watch (stores: Iterable<Store>): () => void
}

export interface Metrics {
  /** The registry holding the metrics: serve it, or add your own (`collectDefaultMetrics({ register })`). */
  readonly registry: MetricsRegistry
  /** A Fastify handler answering the metrics in Prometheus' text format. */
  readonly handler: (request: FastifyRequest, reply: FastifyReply) => Promise<string>
  readonly [kCollector]: MetricsCollector
}

const metricsKeys = knownKeys({ registry: true, buckets: true } satisfies Record<keyof MetricsOptions, true>)

/**
 * The metrics, for the plugin's `metrics` option: one object may serve several plugin instances.
 * Needs prom-client installed; rejects with API_ERR_OPTIONS_INVALID naming it otherwise.
 * @example
 * const metrics = await createMetrics()
 * await app.register(apiConventions, { prefix: '/v1', resources, metrics })
 * const admin = Fastify()
 * admin.get('/metrics', metrics.handler)
 * await admin.listen({ port: 9464, host: '127.0.0.1' })
 */
export async function createMetrics (options: MetricsOptions = {}): Promise<Metrics> {
  refuseUnknownKeys(options, metricsKeys, 'createMetrics')
  const { buckets } = options
  if (buckets !== undefined && (!Array.isArray(buckets) || buckets.length === 0 || buckets.some(bound => typeof bound !== 'number' || !(bound > 0)))) {
    throw new OptionsInvalidError(`createMetrics.buckets must be a non-empty array of positive numbers, received ${JSON.stringify(buckets)}`)
  }
  const prom = await importOptional<PromClient>('prom-client', 'createMetrics')
  const registry = options.registry ?? new prom.Registry()
  const registers = [registry]
  const durations = new prom.Histogram({
    name: 'api_request_duration_seconds',
    help: 'Time to answer a request of the API, by route (its path template), method and status; _count is the number of requests.',
    labelNames: ['route', 'method', 'status'],
    registers,
    ...(buckets === undefined ? {} : { buckets: [...buckets] })
  })
  const refusals = new prom.Counter({ name: 'api_rate_limit_refusals_total', help: 'Requests refused by the rate limit (429), by route and method.', labelNames: ['route', 'method'], registers })
  const replays = new prom.Counter({ name: 'api_idempotency_replays_total', help: 'Answers replayed for a retried Idempotency-Key, by route and method.', labelNames: ['route', 'method'], registers })

  const watched = new Set<Store>()
  /** Each pool's state summed over the stores that have it (several stores may each have a `primary`). */
  const pools = () => {
    const byName = new Map<string, { total: number, idle: number, waiting: number }>()
    for (const store of watched) {
      for (const [name, stats] of Object.entries(store.poolStats?.() ?? {}) as Array<[string, PoolStats]>) {
        const sum = byName.get(name) ?? { total: 0, idle: 0, waiting: 0 }
        byName.set(name, { total: sum.total + stats.total, idle: sum.idle + stats.idle, waiting: sum.waiting + stats.waiting })
      }
    }
    return byName
  }
  // Read when scraped, never per request; the registry holds the gauges.
  // eslint-disable-next-line no-new
  new prom.Gauge({
    name: 'api_store_pool_connections',
    help: 'Connections of each store pool (primary, replica), busy or idle.',
    labelNames: ['pool', 'state'],
    registers,
    collect () {
      this.reset()
      for (const [pool, { total, idle }] of pools()) {
        this.set({ pool, state: 'busy' }, total - idle)
        this.set({ pool, state: 'idle' }, idle)
      }
    }
  })
  // eslint-disable-next-line no-new
  new prom.Gauge({
    name: 'api_store_pool_waiting',
    help: 'Requests waiting for a connection of each store pool: above 0, the pool is exhausted.',
    labelNames: ['pool'],
    registers,
    collect () {
      this.reset()
      for (const [pool, { waiting }] of pools()) this.set({ pool }, waiting)
    }
  })

  /** The replica pools' last check: the largest lag and whether any serves reads, per pool name. */
  const replicas = () => {
    const byName = new Map<string, { lagMillis: number | undefined, usable: boolean }>()
    for (const store of watched) {
      for (const [name, { lagMillis, usable }] of Object.entries(store.poolStats?.() ?? {}) as Array<[string, PoolStats]>) {
        if (usable === undefined) continue
        const seen = byName.get(name)
        const lags = [lagMillis, seen?.lagMillis].filter(lag => lag !== undefined)
        byName.set(name, { lagMillis: lags.length === 0 ? undefined : Math.max(...lags), usable: usable || (seen?.usable ?? false) })
      }
    }
    return byName
  }
  // eslint-disable-next-line no-new
  new prom.Gauge({
    name: 'api_store_replica_lag_seconds',
    help: 'How far each read replica was behind at its last check; absent while it cannot be reached.',
    labelNames: ['pool'],
    registers,
    collect () {
      this.reset()
      for (const [pool, { lagMillis }] of replicas()) if (lagMillis !== undefined) this.set({ pool }, lagMillis / 1000)
    }
  })
  // eslint-disable-next-line no-new
  new prom.Gauge({
    name: 'api_store_replica_usable',
    help: '1 while reads go to the replica; 0 while it is down or lags beyond maxReplicaLagMillis (reads go to the primary).',
    labelNames: ['pool'],
    registers,
    collect () {
      this.reset()
      for (const [pool, { usable }] of replicas()) this.set({ pool }, usable ? 1 : 0)
    }
  })

  const collector: MetricsCollector = {
    observerFor (route) {
      // The path template (`/v1/books/:id`), never the URL: one series per route, and no ids or queries in labels.
      const template = route.url
      return function observeResponse (request, reply, done) {
        const method = request.method
        const status = reply.statusCode
        durations.observe({ route: template, method, status: String(status) }, reply.elapsedTime / 1000)
        // The plugin answers 429 for the rate limit only.
        if (status === 429) refusals.inc({ route: template, method })
        else if (reply.getHeader('idempotent-replayed') === 'true') replays.inc({ route: template, method })
        done()
      }
    },
    watch (stores) {
      const added = [...stores].filter(store => !watched.has(store))
      for (const store of added) watched.add(store)
      return () => { for (const store of added) watched.delete(store) }
    }
  }
  return Object.freeze({
    registry,
    handler: async function serveMetrics (_request: FastifyRequest, reply: FastifyReply) {
      reply.type(registry.contentType)
      return await registry.metrics()
    },
    [kCollector]: collector
  })
}

/** The `metrics` option: what createMetrics() returned, or off (undefined, false). */
export function resolveMetrics (value: unknown): MetricsCollector | null {
  if (value === undefined || value === false) return null
  const collector = (value as Partial<Metrics> | null)?.[kCollector]
  if (collector === undefined) throw new OptionsInvalidError(`metrics must be what createMetrics() returns, or false, received ${value === null ? 'null' : typeof value}`)
  return collector
}
