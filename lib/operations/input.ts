// What an operation takes and what it answers, as plain values: an HTTP route (routes/adapter.ts),
// a batch entry (routes/batch.ts) or any other way in fills an OperationInput and reads an Outcome.
import type { Readable } from 'node:stream'
import type { Fields, Store } from '../stores/store.js'
import type { Preconditions } from '../http/conditional.js'
import type { Format } from '../http/negotiation.js'
import type { ReturnPreference } from '../http/prefer.js'
import type { RawQuery } from '../query/list-query.js'

export interface OperationInput {
  /** Who asks: what the authentication verifier returned (null without credentials). */
  readonly principal: unknown
  /** The record the path names (RETRIEVE, REPLACE, MODIFY, DELETE; the parent of a nested LIST); '' otherwise. */
  readonly id: string
  /** The query parameters as given (LIST, RETRIEVE); the conventions' names or the OData ones. */
  readonly query: RawQuery
  /** The body as validated (CREATE, REPLACE, MODIFY); null otherwise. */
  readonly body: Fields | null
  /** If-Match and the other conditions (RFC 9110 §13), parsed. */
  readonly preconditions: Preconditions
  /** The representation's format: an XML body is another variant of the record, with its own ETag (RFC 9110 §8.8.3). */
  readonly format: Format
  /**
   * The content codings the answer may be compressed in (Accept-Encoding among those offered):
   * a conditional RETRIEVE answers with the tag of the coded representation the client holds.
   */
  readonly codings: readonly string[]
  /** Prefer `return` (RFC 7240) on a write; undefined when not asked. */
  readonly returnPreference: ReturnPreference | undefined
  /** A transaction the operation joins (an Idempotency-Key's, a batch's); null: its own, if it needs one. */
  readonly joined: Store | null
  /**
   * Holds the record the operation reads, so a step before it that read the same record (the
   * authorization check) is not repeated (record-once.ts): the HTTP request, or any fresh object.
   */
  readonly memo: object
}

/** An operation's answer: a status, its headers (lower-case names) and a body, or null for none (201/204 minimal, 304, 204). */
export interface Outcome {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: Readonly<Record<string, unknown>> | null
  /** CREATE: the id of the record it made (also at the end of `location`). */
  readonly created?: string
  /** An export (operations/export.ts): the body as a stream of text, in place of `body`. */
  readonly stream?: Readable
  /** The body is not the route's documented shape (`apply=`'s groups): written as it is. */
  readonly freeForm?: boolean
}

/** One operation of one resource. */
export type Perform = (input: OperationInput) => Promise<Outcome>

/** An input with every member at its neutral value: a caller fills in what its operation reads. */
export function operationInput (given: Partial<OperationInput> & Pick<OperationInput, 'principal'>): OperationInput {
  return { id: '', query: {}, body: null, preconditions: {}, format: 'json', codings: [], returnPreference: undefined, joined: null, memo: {}, ...given }
}

/**
 * An outcome as a result held for later (a batch's operation, an asynchronous write's monitor):
 * the status, and the location, ETag and `data` the answer had, when it had them.
 */
export function outcomeResult ({ status, headers, body }: Outcome): Record<string, unknown> {
  return {
    status,
    ...headers.location !== undefined && { location: headers.location },
    ...headers.etag !== undefined && { etag: headers.etag },
    ...body !== null && { data: body.data }
  }
}
