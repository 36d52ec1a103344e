// Request limits answered as problem+json where the server can still answer: query string
// length → 414, body size → 413 (Fastify's bodyLimit, per route), handler time → 503 (Fastify's
// handlerTimeout, per route), and, at the socket, header size → 431 and slow requests → 408.
import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { BadUrlError, ExpectationFailedError, HeaderInvalidError, HeadersTooLargeError, NotFoundError, OptionsInvalidError, RequestTimeoutError, UriTooLongError, withInvalidParams } from '../errors.js'
import { problemBodyBuilder, problemMediaType } from '../problem.js'
import type { Problem } from '../problem.js'
import { securityHeaders } from './headers.js'
import { stampRequestId } from './request-id.js'
import { kPluginPrefixes, kUnmetExpectation } from '../symbols.js'

export function positiveInteger (value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw new OptionsInvalidError(`${name} must be a positive integer, received ${JSON.stringify(value)}`)
  return value
}

/**
 * A step of the request edge: 414 when the query string is longer than `max` characters, and 400
 * naming the parameter when a percent-escape in it is malformed or not UTF-8 (`%FF`, `%E0%A4%A`):
 * Fastify's query parser would keep such text as it is, and `title=%FF` would look for "%FF".
 */
export function queryStringCheck (max: number) {
  return function checkQueryString (request: FastifyRequest) {
    const question = request.url.indexOf('?')
    if (question === -1) return
    if (request.url.length - question - 1 > max) throw new UriTooLongError(max)
    if (nonAsciiOrMalformedEscape.test(request.url)) checkEscapes(request.url.slice(question + 1))
  }
}

// An escape of an ASCII byte (%00–%7F) always decodes; only the others need decoding to be checked.
const nonAsciiOrMalformedEscape = /%(?![0-7][0-9A-Fa-f])/

function checkEscapes (query: string) {
  for (const part of query.split('&')) {
    if (!part.includes('%') || decodesTo(part) !== undefined) continue
    const name = part.split('=', 1)[0]
    throw withInvalidParams(new BadUrlError(), [{ name: decodesTo(name) ?? name, reason: 'holds a percent-escape that is malformed or not UTF-8' }])
  }
}

function decodesTo (text: string): string | undefined {
  try {
    return decodeURIComponent(text.replaceAll('+', ' '))
  } catch {
    return undefined
  }
}

/**
 * Node answers a request whose `Expect` names anything but 100-continue with a bare 417 of its own:
 * no body, none of the security headers, no Request-Id. Requests under the plugin's `prefix` are
 * handed to the app instead, marked, and `protocolCheck` refuses them like any other refusal
 * (RFC 9110 §10.1.1); the host's other routes keep Node's answer. One listener per server, for every
 * instance of the plugin on it, and none where the host has its own, before or after this one.
 */
export function routeUnmetExpectations (server: Server, prefix: string) {
  const withPrefixes = server as Server & { [kPluginPrefixes]?: string[] }
  const known = withPrefixes[kPluginPrefixes]
  if (known !== undefined) {
    known.push(prefix)
    return
  }
  if (server.listenerCount('checkExpectation') > 0) return
  const prefixes = withPrefixes[kPluginPrefixes] = [prefix]
  server.on('checkExpectation', function passUnmetExpectation (request: IncomingMessage & { [kUnmetExpectation]?: true }, response: ServerResponse) {
    if (server.listenerCount('checkExpectation') > 1) return
    const path = String(request.url).split('?', 1)[0]
    if (prefixes.some(base => base === '' || path === base || path.startsWith(`${base}/`))) {
      request[kUnmetExpectation] = true
      server.emit('request', request, response)
    } else {
      response.writeHead(417).end()
    }
  })
}

/**
 * A step of the request edge, for what HTTP/1.1 itself requires: 417 problem for a request
 * `routeUnmetExpectations` marked, and 400 naming Host for a request without one (RFC 9112 §3.2),
 * which reaches the app when the host turns off Node's own bare 400 (`http: { requireHostHeader: false }`).
 */
export function protocolCheck (request: FastifyRequest) {
  const raw = request.raw as IncomingMessage & { [kUnmetExpectation]?: true }
  if (raw[kUnmetExpectation] === true) throw new ExpectationFailedError()
  if (raw.headers.host === undefined && raw.httpVersion === '1.1') throw withInvalidParams(new HeaderInvalidError(), [{ name: 'Host', reason: 'is required in HTTP/1.1 (RFC 9112 §3.2)' }])
}

/** What the host tells the handlers below: the plugin's `prefix` (or its `problemTypeBase`) and `errorFormat`. */
interface HostProblemOptions {
  readonly prefix?: string
  readonly problemTypeBase?: string
  readonly errorFormat?: 'flat' | 'envelope'
}

/** Where a host handler's problem `type`s point: the plugin's problem pages under `prefix` (written `/v1` or `/v1/`), or the base given. */
export const hostProblemTypeBase = (options: HostProblemOptions): string =>
  options.problemTypeBase ?? `${(options.prefix ?? '').replace(/\/$/, '')}/problems/`

// The host's handlers build their bodies as the plugin's renderer does, from what the plugin is told.
const hostProblemBody = (options: HostProblemOptions) => problemBodyBuilder({
  typeBase: hostProblemTypeBase(options),
  errorFormat: options.errorFormat === 'envelope' ? 'envelope' : 'flat'
})

const problemOf = (error: Error & { code: string, statusCode?: number }): Problem => ({ code: error.code, status: error.statusCode as number, detail: error.message })

const socketErrors: Readonly<Record<string, Problem>> = {
  HPE_HEADER_OVERFLOW: problemOf(new HeadersTooLargeError()),
  ERR_HTTP_REQUEST_TIMEOUT: problemOf(new RequestTimeoutError())
}
// Whatever else Node cannot parse; the request never became a request, so no catalogue text fits it.
const notHttp: Problem = { code: 'API_ERR_BODY_MALFORMED', status: 400, detail: 'The request is not valid HTTP.' }

/**
 * Fastify's `clientErrorHandler` server option: what Node refuses before any route runs (headers
 * over `maxHeaderSize` → 431, a request slower than `requestTimeout` → 408, unparsable HTTP → 400)
 * answered as problem+json instead of Fastify's plain JSON. `prefix` is the plugin's, for `type`.
 * @example
 * const app = Fastify({ http: { maxHeaderSize: 16384 }, requestTimeout: 30000, clientErrorHandler: createClientErrorHandler({ prefix: '/v1' }) })
 */
export function createClientErrorHandler (options: HostProblemOptions = {}) {
  const problemBody = hostProblemBody(options)
  const security = Object.entries(securityHeaders()).map(([name, value]) => `${name}: ${value}\r\n`).join('')
  const responses = new Map<string, readonly [string, string]>()
  for (const [key, problem] of [...Object.entries(socketErrors), ['other', notHttp] as const]) {
    // No request line was understood, so there is no `instance` to name.
    const body = JSON.stringify(problemBody(problem, undefined))
    responses.set(key, [
      `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}\r\nContent-Type: ${problemMediaType}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `${security}Connection: close\r\nRequest-Id: `,
      `\r\n\r\n${body}`
    ])
  }
  return function clientErrorHandler (error: Error & { code?: string }, socket: Socket) {
    // A reset connection has no one left to answer (Node's own handler does the same).
    if (error.code === 'ECONNRESET' || socket.destroyed) return
    const [head, tail] = responses.get(error.code ?? '') ?? responses.get('other') as readonly [string, string]
    // Nothing was parsed, so there is no X-Request-Id to echo: a fresh id still names the answer.
    if (socket.writable) socket.write(`${head}${randomUUID()}\r\nDate: ${new Date().toUTCString()}${tail}`)
    socket.destroy(error)
  }
}

/**
 * Fastify's `frameworkErrors` option: what the router refuses before any plugin runs, so only the
 * host can make it problem+json: a URL that cannot be decoded (`/v1/books/%ZZ`) is 400, and a
 * path parameter longer than `maxParamLength` is 404, since no resource can have such an id.
 * @example
 * const app = Fastify({ frameworkErrors: createFrameworkErrorHandler({ prefix: '/v1' }) })
 */
export function createFrameworkErrorHandler (options: HostProblemOptions = {}) {
  const problemBody = hostProblemBody(options)
  const security = securityHeaders()
  return function frameworkErrors (error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
    const path = request.url.split('?', 1)[0]
    const problem = problemOf(error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? new NotFoundError(path) : new BadUrlError())
    request.log.info({ err: error }, 'request rejected before routing')
    stampRequestId(request, reply)
    reply.code(problem.status).type(problemMediaType).headers(security).send(JSON.stringify(problemBody(problem, path)))
  }
}
