// The HTTP edge of the operations (operations/): a Fastify request read as an OperationInput, and
// the operation's Outcome written as the reply. Everything an operation decides is in the core;
// this only translates.
import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify'
import type { Fields, Store } from '../stores/store.js'
import type { OperationInput, Outcome, Perform } from '../operations/input.js'
import { readPreconditions } from '../http/conditional.js'
import type { Preconditions } from '../http/conditional.js'
import { requestFormat } from '../http/negotiation.js'
import { acceptedCodings } from '../http/compression.js'
import type { Coding } from '../http/compression.js'
import type { Format } from '../http/negotiation.js'
import { returnPreference } from '../http/prefer.js'
import type { ReturnPreference } from '../http/prefer.js'
import { keyedTransaction, sendEmpty } from '../idempotency.js'
import type { RawQuery } from '../query/list-query.js'
import { sendFreeForm } from '../formats/index.js'

/**
 * A request as an operation's input. Each member is read when the operation asks for it, as the
 * handlers read their request: a malformed If-Match is refused where the operation reads its
 * conditions (after a malformed query, say), and a LIST never parses Prefer.
 */
class RequestInput implements OperationInput {
  readonly #request: FastifyRequest
  readonly #offered: readonly Coding[]
  #preconditions: Preconditions | undefined
  constructor (request: FastifyRequest, offered: readonly Coding[]) {
    this.#request = request
    this.#offered = offered
  }

  get principal (): unknown { return this.#request.principal }
  // Read only by the operations of routes that have them: an item's `:id`, a write's body.
  get id (): string { return (this.#request.params as { id: string }).id }
  get query (): RawQuery { return this.#request.query as RawQuery }
  get body (): Fields | null { return this.#request.body as Fields }
  get preconditions (): Preconditions { return (this.#preconditions ??= readPreconditions(this.#request.headers)) }
  get format (): Format { return requestFormat(this.#request) }
  get codings (): readonly string[] { return acceptedCodings(this.#request, this.#offered) }
  get returnPreference (): ReturnPreference | undefined { return returnPreference(this.#request.headers.prefer) }
  get joined (): Store | null { return keyedTransaction(this.#request) }
  // The authorization step read the record the path names on this request (record-once.ts).
  get memo (): object { return this.#request }
}

/** The reply an outcome makes; under an Idempotency-Key, an empty answer waits for its transaction (idempotency.ts). */
function reply (reply: FastifyReply, outcome: Outcome) {
  reply.code(outcome.status)
  for (const name in outcome.headers) reply.header(name, outcome.headers[name])
  if (outcome.stream !== undefined) return outcome.stream
  if (outcome.freeForm === true) sendFreeForm(reply)
  return outcome.body === null ? sendEmpty(reply) : outcome.body
}

/** The route handler performing `perform` for each request; `offered`: the content codings the plugin compresses in. */
export function routeHandler (perform: Perform, offered: readonly Coding[]): RouteHandlerMethod {
  return async function performOperation (request: FastifyRequest, fastifyReply: FastifyReply) {
    return reply(fastifyReply, await perform(new RequestInput(request, offered)))
  }
}
