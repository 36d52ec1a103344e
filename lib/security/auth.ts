// Authentication and authorization (spec "Authentication" 1–4; "Request headers": Authorization,
// x-api-key): RFC 9110 §11 credentials, RFC 6750 Bearer, RFC 7617 Basic, the legacy x-api-key;
// 401 with WWW-Authenticate, 403 when the authorization check refuses.
import { hash, timingSafeEqual } from 'node:crypto'
import type { FastifyReply, FastifyRequest, RequestPayload } from 'fastify'
import type { ResourceModel } from '../registry/model.js'
import { operationTable } from '../operations/table.js'
import type { OperationName } from '../operations/table.js'
import type { Fields, Store } from '../stores/store.js'
import { ForbiddenError, OptionsInvalidError, UnauthorizedError, withHeaders, withInvalidParams } from '../errors.js'
import { decodeBase64 } from './base64.js'
import { knownKeys, refuseUnknownKeys } from '../options-check.js'
import { readRecordOnce } from '../record-once.js'
import type { Views } from '../rules/view.js'
import { isPromise } from './edge.js'
import type { MaybePromise } from './edge.js'

/** What a verifier answers: the principal, or null/undefined when the credentials are not valid. */
export type Verified<P> = P | null | undefined | Promise<P | null | undefined>

/** The operations the authorization check is asked about (operations/table.ts); `capabilities` is OPTIONS (QUERY CAPABILITIES). */
export type AuthorizedOperation = OperationName

export interface AuthorizationCheck<P = unknown> {
  readonly principal: P
  /** The resource name (plural), e.g. `books`; for `/authors/{id}/books` it is `books`. */
  readonly resource: string
  readonly operation: AuthorizedOperation
  readonly method: string
  /** Item operations: the id in the path. */
  readonly id?: string
  /** Item operations: the stored record (null when there is none; the route then answers 404). */
  readonly record?: Fields | null
  readonly request: FastifyRequest
}

export interface AuthOptions<P = unknown> {
  /** `realm` of the challenges in WWW-Authenticate. Default `api`. */
  readonly realm?: string | undefined
  /** `authorization_uri` of the Bearer challenge: where clients obtain a token. */
  readonly authorizationUri?: string | undefined
  /** Verifies a Bearer token (RFC 6750); required. */
  bearer (token: string, request: FastifyRequest): Verified<P>
  /** Verifies Basic credentials (RFC 7617); the scheme is refused when absent. */
  basic? (user: string, password: string, request: FastifyRequest): Verified<P>
  /** Legacy `x-api-key` values and their principals; the method is off unless given. Compared in constant time. */
  readonly apiKeys?: Iterable<readonly [string, P]> | undefined
  /** Per-resource, per-operation check; false (or a rejected promise with a 403) refuses with 403. Default: allow. */
  authorize? (check: AuthorizationCheck<P>): boolean | Promise<boolean>
  /** The rate-limit key of a principal. Default: its `id` when a string or number, else a digest of the credentials. */
  principalKey? (principal: P): string
}

/**
 * Declares the authentication options with the principal type inferred from the verifiers,
 * and returns them with `principalOf(request)`, the typed view of `request.principal`.
 * @example
 * const auth = defineAuth({ bearer: async token => users.byToken(token) })
 * app.register(apiConventions, { prefix: '/v1', resources, auth })
 * const user = auth.principalOf(request) // typed as the verifier's result
 */
export function defineAuth<P> (options: AuthOptions<P>): AuthOptions<P> & { principalOf (request: FastifyRequest): P | null } {
  // `?? null`: a request the plugin never authenticated (a host's route outside it) has no field at all.
  return { ...options, principalOf: (request: FastifyRequest) => (request.principal ?? null) as P | null }
}

/** A table of secrets looked up in constant time: every entry is compared, on SHA-256 digests of equal length. */
export function secretTable<P> (entries: Iterable<readonly [string, P]>): (presented: string) => P | null {
  const table = [...entries].map(([secret, principal]) => ({ digest: sha256(secret), principal }))
  return function lookUpSecret (presented) {
    const digest = sha256(presented)
    let found: P | null = null
    for (const entry of table) {
      if (timingSafeEqual(entry.digest, digest) && found === null) found = entry.principal
    }
    return found
  }
}

const sha256 = (text: string) => hash('sha256', text, 'buffer')

export interface ResolvedAuth {
  readonly bearer: AuthOptions['bearer']
  readonly basic: AuthOptions['basic']
  readonly apiKey: ((presented: string) => unknown) | undefined
  readonly authorize: AuthOptions['authorize']
  readonly principalKey: (principal: unknown, credentials: string) => string
  /** The WWW-Authenticate values, prepared once: plain, invalid_request, invalid_token. */
  readonly challenges: Readonly<Record<ChallengeKind, string>>
}

type ChallengeKind = 'none' | 'invalid_request' | 'invalid_token'

// quoted-string content (RFC 9110 §5.6.4) without the need for escapes.
const quotable = /^[\t\x20\x21\x23-\x5b\x5d-\x7e]*$/

// `principalOf` is what defineAuth adds: its result is passed as the option.
const authKeys = knownKeys({
  realm: true, authorizationUri: true, bearer: true, basic: true, apiKeys: true, authorize: true, principalKey: true, principalOf: true
} satisfies Record<keyof AuthOptions | 'principalOf', true>)

export function resolveAuth (value: unknown): ResolvedAuth | null {
  if (value === undefined) return null
  const fail = (problem: string) => new OptionsInvalidError(`auth${problem}`)
  if (typeof value !== 'object' || value === null) throw fail(` must be an object, received ${JSON.stringify(value)}`)
  const given = value as Record<string, unknown>
  refuseUnknownKeys(given, authKeys, 'auth')
  if (typeof given.bearer !== 'function') throw fail('.bearer must be a function (token, request) => principal | null')
  for (const name of ['basic', 'authorize', 'principalKey']) {
    if (given[name] !== undefined && typeof given[name] !== 'function') throw fail(`.${name} must be a function, received ${typeof given[name]}`)
  }
  const realm = given.realm ?? 'api'
  if (typeof realm !== 'string' || realm === '' || !quotable.test(realm)) throw fail(`.realm must be a non-empty string without quotes or backslashes, received ${JSON.stringify(realm)}`)
  const uri = given.authorizationUri
  if (uri !== undefined && (typeof uri !== 'string' || !/^[^\s"\\<>]+$/.test(uri))) throw fail(`.authorizationUri must be a URI, received ${JSON.stringify(uri)}`)
  let apiKey
  if (given.apiKeys !== undefined) {
    const entries = typeof given.apiKeys === 'object' && given.apiKeys !== null && Symbol.iterator in given.apiKeys ? [...given.apiKeys as Iterable<unknown>] : undefined
    if (entries === undefined || entries.some(entry => !Array.isArray(entry) || typeof entry[0] !== 'string' || !apiKeyPattern.test(entry[0]))) {
      throw fail('.apiKeys must be a Map (or [key, principal] pairs) of keys made of visible ASCII characters')
    }
    apiKey = secretTable(entries as Array<[string, unknown]>)
  }
  const bearerChallenge = `Bearer realm="${realm}"${uri === undefined ? '' : `, authorization_uri="${uri}"`}`
  const others = given.basic === undefined ? '' : `, Basic realm="${realm}", charset="UTF-8"`
  const principalKey = given.principalKey as ((principal: unknown) => string) | undefined
  return Object.freeze({
    bearer: given.bearer as AuthOptions['bearer'],
    basic: given.basic as AuthOptions['basic'],
    apiKey,
    authorize: given.authorize as AuthOptions['authorize'],
    principalKey: principalKey === undefined ? defaultPrincipalKey : (principal: unknown) => principalKey(principal),
    challenges: Object.freeze({
      none: bearerChallenge + others,
      invalid_request: `${bearerChallenge}, error="invalid_request"${others}`,
      invalid_token: `${bearerChallenge}, error="invalid_token"${others}`
    })
  })
}

function defaultPrincipalKey (principal: unknown, credentials: string): string {
  const id = (principal as { id?: unknown } | null)?.id
  if (typeof id === 'string' || typeof id === 'number') return `id:${id}`
  return `credentials:${sha256(credentials).toString('base64url')}`
}

/** The result of looking at a request's credentials. */
export type Authentication =
  | { readonly kind: 'anonymous' }
  | { readonly kind: 'authenticated', readonly principal: unknown, readonly key: string }
  | { readonly kind: 'refused', readonly challenge: ChallengeKind, readonly name: string, readonly reason: string }

// RFC 9110 §11.4: credentials = auth-scheme [ 1*SP ( token68 / #auth-param ) ]; RFC 6750 §2.1 b64token.
const credentialsPattern = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+)(?: +(.*))?$/
const token68 = /^[A-Za-z0-9\-._~+/]+=*$/
const apiKeyPattern = /^[\x21-\x7e]{1,1024}$/

const anonymous: Authentication = { kind: 'anonymous' }
const refused = (challenge: ChallengeKind, name: string, reason: string): Authentication => ({ kind: 'refused', challenge, name, reason })

/** Counts Authorization fields: Node keeps only the first of duplicates, so the raw list is the only witness. */
function authorizationCount (rawHeaders: readonly string[]): number {
  let count = 0
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i].length === 13 && rawHeaders[i].toLowerCase() === 'authorization') count++
  return count
}

export function createAuthenticator (auth: ResolvedAuth) {
  /** The verifier's answer as an Authentication; synchronous when the verifier is. */
  function verified (answer: Verified<unknown>, key: string, name: string, reason: string, challenge: ChallengeKind = 'invalid_token'): MaybePromise<Authentication> {
    const judge = (principal: unknown): Authentication => principal === null || principal === undefined || principal === false
      ? refused(challenge, name, reason)
      : { kind: 'authenticated', principal, key: auth.principalKey(principal, key) }
    return isPromise(answer) ? answer.then(judge) : judge(answer)
  }

  /** Looks at the request's credentials: anonymous, authenticated, or refused with the reason. */
  function authenticate (request: FastifyRequest): MaybePromise<Authentication> {
    const header = request.headers.authorization
    if (header !== undefined) {
      // Authorization wins over x-api-key (spec "Authentication" 2).
      if (authorizationCount(request.raw.rawHeaders) > 1) return refused('invalid_request', 'Authorization', 'must be sent once')
      const match = credentialsPattern.exec(header)
      if (match === null) return refused('invalid_request', 'Authorization', 'must be a scheme followed by credentials (RFC 9110 §11.4)')
      const scheme = match[1].toLowerCase()
      const credentials = match[2] ?? ''
      if (scheme === 'bearer') {
        if (credentials === '') return refused('invalid_request', 'Authorization', 'the Bearer token is missing')
        if (!token68.test(credentials)) return refused('invalid_token', 'Authorization', 'the Bearer token is malformed (RFC 6750 §2.1)')
        return verified(auth.bearer(credentials, request), credentials, 'Authorization', 'the Bearer token is not valid')
      }
      if (scheme === 'basic' && auth.basic !== undefined) {
        const decoded = token68.test(credentials) ? decodeBase64(credentials) : null
        const colon = decoded?.indexOf(':') ?? -1
        if (decoded === null || colon === -1) return refused('invalid_request', 'Authorization', 'Basic credentials must be base64 of user:password (RFC 7617)')
        return verified(auth.basic(decoded.slice(0, colon), decoded.slice(colon + 1), request), credentials, 'Authorization', 'the user name or password is not valid')
      }
      // RFC 6750 §3.1: an unsupported method gets the challenge without an error code.
      return refused('none', 'Authorization', `the scheme is not supported; use ${auth.basic === undefined ? 'Bearer' : 'Bearer or Basic'}`)
    }
    const key = request.headers['x-api-key']
    if (key !== undefined && auth.apiKey !== undefined) {
      if (typeof key !== 'string' || !apiKeyPattern.test(key)) return refused('none', 'x-api-key', 'must be sent once, as visible ASCII characters')
      // No Bearer token was sent, so the challenge carries no error code (RFC 6750 §3).
      return verified(auth.apiKey(key), key, 'x-api-key', 'the key is not valid', 'none')
    }
    return anonymous
  }

  /** 401 unless the route is public (route config `public: true`) or the credentials hold; sets `request.principal`. */
  function requireAuthentication (request: FastifyRequest, result: Authentication) {
    if (request.routeOptions.config.public === true) return
    if (result.kind === 'authenticated') {
      request.principal = result.principal
      return
    }
    const problem = result.kind === 'anonymous'
      ? { challenge: 'none' as const, name: 'Authorization', reason: 'credentials are required' }
      : result
    throw withHeaders(withInvalidParams(new UnauthorizedError(), [{ name: problem.name, reason: problem.reason }]), { 'www-authenticate': auth.challenges[problem.challenge] })
  }

  return { authenticate, requireAuthentication }
}

export type Authenticator = ReturnType<typeof createAuthenticator>

/** The detail of a 403 from the authorization check. */
export const refusalOf = (operation: AuthorizedOperation, model: ResourceModel) => `These credentials do not allow ${operationTable[operation].gerund} ${model.name}.`

/** One operation to authorize, asked from an HTTP route, a batch entry or any other way in. */
export interface AuthorizationAsk {
  readonly principal: unknown
  readonly model: ResourceModel
  readonly operation: AuthorizedOperation
  /** The method the check is shown: the request's (HEAD for a GET route), else the operation's. */
  readonly method: string
  /** An item operation's id: its record is read (as the caller sees it) and shown to the check; undefined: none is read. */
  readonly id: string | undefined
  /** Where the record is read: the resource's store, or the transaction the operation joins. */
  readonly store: Store
  /** Keeps the record read for the operation that follows (record-once.ts). */
  readonly memo: object
  /** The HTTP request the operation came in. */
  readonly request: FastifyRequest
}

/**
 * Asks `authorize` about one operation: `done(null)` when it allows it, `done(403)` when not.
 * Callback style, and synchronous when it can be: each await of an async hook cost more than the check.
 */
export function checkAuthorization (authorize: NonNullable<AuthOptions['authorize']>, views: Views, ask: AuthorizationAsk, done: (error: Error | null) => void): void {
  const { principal, model, operation, method, id, request } = ask
  const decide = (record: Fields | null | undefined) => {
    const allowed = authorize({ principal, resource: model.name, operation, method, id, record, request })
    const conclude = (verdict: boolean) => done(verdict === true ? null : new ForbiddenError(refusalOf(operation, model)))
    if (isPromise(allowed)) allowed.then(conclude, done)
    else conclude(allowed)
  }
  if (id === undefined) return decide(undefined)
  // As the caller sees it: a record hidden from it reaches the check as none, as on the operation's path.
  readRecordOnce(ask.memo, ask.store, views.forCaller(principal)(model), id).then(record => decide(record?.data ?? null), done)
}

/** A route-level preParsing hook: the authorization check for one resource operation, before the body is read. */
export function authorizationHook (authorize: NonNullable<AuthOptions['authorize']>, model: ResourceModel, store: Store, views: Views, operation: AuthorizedOperation, item: boolean) {
  return function checkRouteAuthorization (request: FastifyRequest, _reply: FastifyReply, payload: RequestPayload, done: (error: Error | null, payload?: RequestPayload) => void) {
    const id = item ? (request.params as { id: string }).id : undefined
    checkAuthorization(authorize, views, { principal: request.principal, model, operation, method: request.method, id, store, memo: request, request }, error => done(error, payload))
  }
}
