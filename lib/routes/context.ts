// What every route module receives: resolved options and what was prepared from them at
// registration, so handlers only read.
import type { Ajv } from 'ajv'
import type { ResolvedOptions } from '../options.js'
import type { EnvelopeContext } from '../envelope/index.js'
import type { ListQueryContext } from '../query/list-query.js'
import type { StoreOf } from './stores.js'

export interface RouteContext {
  readonly options: ResolvedOptions
  readonly envelope: EnvelopeContext
  readonly query: ListQueryContext
  readonly ajv: Ajv
  readonly storeOf: StoreOf
}

// Every write takes the spec's four types (formats/ reads the three text forms); a PATCH in any
// of them is a merge patch of the fields it carries (RFC 7396).
const writeTypes = ['application/json', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data'] as const

/** The body media types each write accepts (spec "Request headers": Content-Type). */
export const bodyTypes = {
  create: writeTypes,
  replace: writeTypes,
  modify: ['application/json', 'application/merge-patch+json', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data']
} as const
