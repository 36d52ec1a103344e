// Response compression (docs/demo-contract.md "Starting it": `br` and `gzip` on responses of 1 KB or more when
// Accept-Encoding asks, with Vary: Accept-Encoding): @fastify/compress, registered inside the
// plugin so it covers the plugin's routes (the API, the OpenAPI document, the docs page and its
// script, the problem pages) and none of the host's. Around it, what a content coding changes in
// HTTP: a compressed body is another representation, with a strong ETag of its own (RFC 9110
// §8.8.3.3), and HEAD answers with the headers GET would send (RFC 9110 §9.3.2, §8.6).
import { promisify } from 'node:util'
import { brotliCompress, constants, gzip } from 'node:zlib'
import compress from '@fastify/compress'
import Negotiator from 'negotiator'
import type { FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler, RouteOptions } from 'fastify'
import { knownKeys, positiveIntegerOr, switchableOptions } from '../options-check.js'
import { OptionsInvalidError } from '../errors.js'
import { codedETag } from './conditional.js'

export type Coding = 'br' | 'gzip'
const codings: readonly Coding[] = ['br', 'gzip']

export interface CompressionOptions {
  /** The smallest body compressed, in bytes. Default 1024. */
  readonly threshold?: number | undefined
  /** The codings offered; the first wins when the client's q-values tie. Default `['br', 'gzip']`. */
  readonly encodings?: readonly Coding[] | undefined
}

export interface ResolvedCompression {
  readonly threshold: number
  readonly encodings: readonly Coding[]
}

const compressionKeys = knownKeys({ threshold: true, encodings: true } satisfies Record<keyof CompressionOptions, true>)

/** `false` sends every body as it is; anything else is checked here. */
export function resolveCompression (value: unknown): ResolvedCompression | null {
  const given = switchableOptions(value, compressionKeys, 'compression', '{ threshold?, encodings? }')
  if (given === null) return null
  const encodings = given.encodings ?? codings
  if (!Array.isArray(encodings) || encodings.length === 0 || encodings.some(e => !codings.includes(e)) || new Set(encodings).size !== encodings.length) {
    throw new OptionsInvalidError(`compression.encodings must be a non-empty array of distinct codings among ${codings.map(c => `'${c}'`).join(', ')}, received ${JSON.stringify(given.encodings)}`)
  }
  return Object.freeze({ threshold: positiveIntegerOr(given.threshold, 'compression.threshold', 1024), encodings: Object.freeze([...encodings]) })
}

// Brotli's own default, quality 11, takes about 100 times as long as quality 4 for 8 to 25 % fewer
// bytes: far too slow for bodies made per request; 5 takes up to half as long again as 4 for 2 to
// 12 % fewer (benchmarks/README.md, "Compression").
const brotliQuality = 4
const brotliOptions = { params: { [constants.BROTLI_PARAM_QUALITY]: brotliQuality } }

/**
 * The `compress` route option of a route that streams its body (Server-Sent Events, NDJSON or CSV
 * exports): every write is flushed through the compressor, so an event or a row leaves when it is
 * written instead of when the compressor's window fills. A route sets it with `config.streams`.
 */
function streamingCompression (settings: ResolvedCompression) {
  return {
    threshold: settings.threshold,
    encodings: [...settings.encodings],
    brotliOptions: { ...brotliOptions, flush: constants.BROTLI_OPERATION_FLUSH },
    zlibOptions: { flush: constants.Z_SYNC_FLUSH }
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route writes its body as a stream of events or rows: compressed with a flush after each write. */
    streams?: boolean
    /** The route sends the same body every time (the OpenAPI document, the docs page's script): compressed once per coding. */
    constantBody?: boolean
  }
}

const compressors: Readonly<Record<Coding, (body: string) => Promise<Buffer>>> = {
  br: body => promisify(brotliCompress)(body, brotliOptions),
  gzip: body => promisify(gzip)(body)
}

/**
 * An onSend step, before @fastify/compress's (which leaves a body with a Content-Encoding alone):
 * on routes with a constant body, each coding of the body is made once, off the event loop, and
 * kept while the route sends that body. Compressing the docs page's 4 MB script took 0.5 s of CPU
 * per request, the demo's OpenAPI document 30 to 50 ms. Read per request: Scalar's routes get
 * their config from an onRoute hook that runs after this module's.
 */
function compressOnce (settings: ResolvedCompression): onSendHookHandler {
  // By path: a GET and its HEAD share them.
  const madeAt = new Map<string, Map<Coding, { readonly source: string, readonly body: Promise<Buffer> }>>()
  return function compressedOnce (request, reply, payload, done) {
    // Cheapest first: this runs on every answer (routeOptions is a getter that builds an object).
    if (request.headers['accept-encoding'] === undefined || typeof payload !== 'string' ||
      request.routeOptions.config.constantBody !== true || Buffer.byteLength(payload) < settings.threshold) return done(null, payload)
    const coding = acceptedCodings(request, settings.encodings)[0] as Coding | undefined
    if (coding === undefined) return done(null, payload)
    const path = request.routeOptions.url as string
    let made = madeAt.get(path)
    if (made === undefined) madeAt.set(path, made = new Map())
    let kept = made.get(coding)
    if (kept?.source !== payload) made.set(coding, kept = { source: payload, body: compressors[coding](payload) })
    kept.body.then(body => {
      reply.header('content-encoding', coding).header('content-length', body.length)
      done(null, body)
    }, done)
  }
}

/**
 * Registers @fastify/compress on the plugin's instance, before any route, and the two route
 * settings around it: a streaming route's flush, and, after compression, the coded ETag, Vary and
 * HEAD. Nothing when compression is off.
 */
export async function registerCompression (app: FastifyInstance, settings: ResolvedCompression | null) {
  if (settings === null) return
  const streaming = streamingCompression(settings)
  // Before @fastify/compress's own onRoute hook, which reads the route's `compress`.
  app.addHook('onRoute', function flushStreams (route: RouteOptions) {
    if (route.config?.streams === true) route.compress = streaming
  })
  app.addHook('onSend', compressOnce(settings))
  await app.register(compress, {
    threshold: settings.threshold,
    encodings: [...settings.encodings],
    brotliOptions,
    // Request bodies are not decoded: a Content-Encoding on a request is left to what parses it.
    globalDecompression: false
  })
  app.addHook('onRoute', function afterCompression (route: RouteOptions) {
    // An array by now, @fastify/compress's step last (it makes one of whatever the route had).
    const onSend = route.onSend as onSendHookHandler[]
    if (route.method === 'HEAD') compressHead(onSend)
    route.onSend = [...onSend, codedHeaders]
  })
}

/**
 * Fastify derives a GET's HEAD route with a last onSend step that drops the body and sets
 * Content-Length from it; @fastify/compress's step comes after it and finds no body left. Moved
 * before it, HEAD compresses as GET does, so its Content-Length is the compressed size GET sends
 * (or absent when GET streams), as RFC 9110 §8.6 demands of a HEAD answer that carries one.
 */
function compressHead (onSend: onSendHookHandler[]) {
  const head = onSend.findIndex(step => step.name === 'headRouteOnSendHandler')
  if (head !== -1) onSend.push(...onSend.splice(head, 1))
}

/**
 * After @fastify/compress: a compressed body is another representation, so its strong ETag names
 * the coding (`"7"` → `"7+br"`); Accept-Encoding, which the fixed Vary lists on every answer (the
 * choice is made for small bodies too), is not listed twice.
 */
function codedHeaders (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: null, payload: unknown) => void) {
  const coding = reply.getHeader('content-encoding')
  if (coding !== undefined) {
    const etag = reply.getHeader('etag')
    if (typeof etag === 'string') reply.header('etag', codedETag(etag, String(coding)))
    const vary = String(reply.getHeader('vary'))
    // @fastify/compress looks for the name in lower case only, and adds it again.
    if (vary.endsWith(', accept-encoding') && vary.includes('Accept-Encoding')) reply.header('vary', vary.slice(0, -', accept-encoding'.length))
  }
  done(null, payload)
}

/**
 * The codings of `offered` the request's Accept-Encoding accepts (RFC 9110 §12.5.3), in its order
 * of preference; none when it sends no Accept-Encoding (nothing is compressed then) or compression is off.
 */
export function acceptedCodings (request: FastifyRequest, offered: readonly Coding[]): readonly string[] {
  const header = request.headers['accept-encoding']
  if (header === undefined || offered.length === 0) return []
  // `x-gzip` is gzip (RFC 9110 §8.4.1.3), as @fastify/compress reads it; ties go to the order
  // offered, as it breaks them (@types/negotiator omits the option).
  const negotiator = new Negotiator({ headers: { 'accept-encoding': header.replace(/x-gzip/gi, 'gzip') } }) as unknown as PreferringNegotiator
  return negotiator.encodings(offered, { preferred: offered }).filter(coding => coding !== 'identity')
}

interface PreferringNegotiator { encodings (available: readonly string[], options: { preferred: readonly string[] }): string[] }
