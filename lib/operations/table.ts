// The operation table (spec "Operations"): every operation a resource serves, once, with what the
// rest of the plugin derives from it: the route table's methods and places (routes/table.ts), the
// words of a 403 (security/auth.ts), the batch's operations (routes/batch.ts), which writes read a
// body (pipeline.ts), and the operation types of the public API. Pure data: imports nothing.

/** Where an operation is served: on a collection's path, or on a path naming one record. */
export type Place = 'collection' | 'item'

export interface OperationEntry {
  /** Reads change nothing; writes change one record. */
  readonly kind: 'read' | 'write'
  readonly place: Place
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS'
  /** Which of the resource's derived body schemas it reads (registry/derive.ts schemaNames); null: none. */
  readonly body: 'create' | 'replace' | 'modify' | null
  /** Whether an Idempotency-Key makes it safe to retry (POST and PATCH; the others are idempotent already). */
  readonly keyed: boolean
  /**
   * The problems it can answer on any resource (the OpenAPI responses start from these): what a
   * resource adds (422 for a relation, 428 when If-Match is required, business rules) and what the
   * request's edge answers (401, 406, 429 …) are added where the route's schema is made.
   */
  readonly problems: readonly number[]
  /** The statuses of its successful answers (304: a conditional read; 204: Prefer return=minimal, or DELETE). */
  readonly success: readonly number[]
  /** `These credentials do not allow <gerund> books.` */
  readonly gerund: string
  /** `books cannot be <past> here` (a batch naming an operation the resource does not serve). */
  readonly past: string
}

export const operationTable = {
  list: { kind: 'read', place: 'collection', method: 'GET', body: null, keyed: false, problems: [400, 412, 503], success: [200, 304], gerund: 'listing', past: 'listed' },
  create: { kind: 'write', place: 'collection', method: 'POST', body: 'create', keyed: true, problems: [400, 409, 412, 413, 415, 503], success: [201], gerund: 'creating', past: 'created' },
  retrieve: { kind: 'read', place: 'item', method: 'GET', body: null, keyed: false, problems: [400, 404, 412, 503], success: [200, 304], gerund: 'reading', past: 'read' },
  replace: { kind: 'write', place: 'item', method: 'PUT', body: 'replace', keyed: false, problems: [400, 404, 409, 412, 413, 415, 503], success: [200, 204], gerund: 'replacing', past: 'replaced' },
  modify: { kind: 'write', place: 'item', method: 'PATCH', body: 'modify', keyed: true, problems: [400, 404, 409, 412, 413, 415, 503], success: [200, 204], gerund: 'modifying', past: 'modified' },
  delete: { kind: 'write', place: 'item', method: 'DELETE', body: null, keyed: false, problems: [400, 404, 412, 413, 415, 503], success: [204], gerund: 'deleting', past: 'deleted' },
  // QUERY CAPABILITIES is served on every path of a resource, whatever operations it exposes (on a
  // path naming a record, also 404). A body, though unused, is parsed (413, 415); so is DELETE's.
  capabilities: { kind: 'read', place: 'collection', method: 'OPTIONS', body: null, keyed: false, problems: [400, 413, 415], success: [200], gerund: 'querying the capabilities of', past: 'queried' }
} as const satisfies Record<string, OperationEntry>

type Table = typeof operationTable
/** Every operation, QUERY CAPABILITIES included: what the authorization check is asked about. */
export type OperationName = keyof Table
/** The operations a resource may expose or withhold (`operations` of a resource definition). */
export type ResourceOperation = Exclude<OperationName, 'capabilities'>
/** The operations that change a record: what hooks, server values and a batch see. */
export type WriteOperation = { [N in OperationName]: Table[N]['kind'] extends 'write' ? N : never }[OperationName]
/** The writes that read a body. */
export type BodyWrite = { [N in OperationName]: Table[N]['body'] extends null ? never : N }[OperationName]

const names = Object.keys(operationTable) as OperationName[]
export const resourceOperations = names.filter((name): name is ResourceOperation => name !== 'capabilities')
export const writeOperations = names.filter((name): name is WriteOperation => operationTable[name].kind === 'write')
export const bodyWrites: ReadonlySet<string> = new Set(names.filter(name => operationTable[name].body !== null))
/** The operations an Idempotency-Key applies to. */
export const keyedOperations = names.filter(name => operationTable[name].keyed)
/** The writes of a record that exists: what If-Match and the other write preconditions apply to. */
export const itemWrites = writeOperations.filter(name => operationTable[name].place === 'item')

/** What Allow lists on a resource's path of `place` when it serves `served` (GET serves HEAD; OPTIONS is everywhere). */
export function allowedMethods (place: Place, served: ReadonlySet<string>): string[] {
  const methods = resourceOperations
    .filter(name => operationTable[name].place === place && served.has(name))
    .flatMap(name => operationTable[name].method === 'GET' ? ['GET', 'HEAD'] : [operationTable[name].method])
  return [...methods, 'OPTIONS']
}
