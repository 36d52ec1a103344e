// What every store can keep, checked the same way before any store writes: text without NUL or
// lone surrogates, finite numbers, safe integers, dates from 0001 to 9999; a date-time is stored as
// its UTC instant to the millisecond, the ISO text the SQL store reads back, so GET and LIST answer
// the same whichever store holds the record.
import { UnprocessableError, withInvalidParams } from '../errors.js'
import type { FieldModel, ResourceModel } from '../registry/model.js'
import type { Fields } from '../stores/store.js'
import { calendarDay, isDate } from './iso-date.js'

// RFC 3339 §5.6 as ajv-formats admits it: `t` or whitespace between date and time, `z`, ±hh,
// ±hhmm or ±hh:mm offsets, any number of fractional digits, second 60.
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt\s](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2})(?::?(\d{2}))?)$/
// PostgreSQL has no year 0 (its docs, "History of Units": 1 BC precedes AD 1), and the ISO
// form of a year needs four digits (RFC 3339 §5.6), so 0001–9999.
const FIRST = Date.parse('0001-01-01T00:00:00.000Z')
const LAST = Date.parse('9999-12-31T23:59:59.999Z')
const RANGE = 'must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z'

/**
 * `2020-01-01T12:00:00.0005+02:00` → `2020-01-01T10:00:00.000Z`, as PostgreSQL's timestamptz
 * reads it (fractions rounded to microseconds, a leap second rolling into the next minute) and
 * the SQL store writes it (truncated to milliseconds). Null when it is no date-time in range.
 */
export function normalizeDateTime (text: string): string | null {
  const match = DATE_TIME.exec(text)
  if (match === null) return null
  const [, year, month, day, hour, minute, second, fraction = '', sign, offsetHours = '0', offsetMinutes = '0'] = match
  const date = calendarDay(Number(year), Number(month), Number(day))
  if (date === null || Number(hour) > 23 || Number(minute) > 59 || Number(second) > 60 || Number(offsetHours) > 23 || Number(offsetMinutes) > 59) return null
  const offset = (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes))
  const micros = Math.round(Number(`0.${fraction}`) * 1e6)
  date.setUTCHours(Number(hour), Number(minute) - offset, Number(second), Math.floor(micros / 1000))
  const time = date.getTime()
  return time >= FIRST && time <= LAST ? date.toISOString() : null
}

/** A 422 naming the field, for a value the store will not keep as given. */
export function unstorableError (name: string, reason: string) {
  return withInvalidParams(new UnprocessableError(`${name} ${reason}.`), [{ name, reason }])
}

/**
 * The value as stored: date-times normalised. A 422 naming the field, the same from every store,
 * for a date or date-time out of range, an integer no double holds exactly, and anything
 * `unstorableReason` names, in the value or anywhere inside it.
 */
export function storedValue (field: FieldModel, value: unknown): unknown {
  if (field.type === 'integer' && typeof value === 'number' && !Number.isSafeInteger(value)) throw unstorableError(field.name, 'must be an integer between -(2^53 - 1) and 2^53 - 1')
  const reason = unstorableReason(value)
  if (reason !== undefined) throw unstorableError(field.name, reason)
  if (typeof value !== 'string') return value
  if (field.type === 'datetime') {
    const normalized = normalizeDateTime(value)
    if (normalized === null) throw unstorableError(field.name, `${RANGE}, as an RFC 3339 date-time`)
    return normalized
  }
  if (field.type === 'date' && !isDate(value)) throw unstorableError(field.name, 'must be a date between 0001-01-01 and 9999-12-31')
  return value
}

export const nonFinite = 'must be a finite number (a JSON number beyond ±1.8e308 reads as Infinity)'

/** Why no store can keep this text exactly as it is, or undefined when every store can. */
export function unstorableText (text: string): string | undefined {
  if (!unstorable.test(text)) return undefined
  return text.includes('\u0000') ? 'cannot contain the NUL character' : 'cannot contain an unpaired UTF-16 surrogate (\\uD800-\\uDFFF)'
}

/** Why no store can keep a field's value (its first unstorable text, member name or number), or undefined. */
export function unstorableReason (value: unknown): string | undefined {
  if (typeof value === 'string') return unstorableText(value)
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : nonFinite
  if (typeof value !== 'object' || value === null) return undefined
  const found = findUnstorable(value)
  if (found === undefined) return undefined
  return typeof found[1] === 'number' ? nonFinite : unstorableText(found[1])
}

/**
 * A copy of the record with its dates and numbers checked and date-times normalised, its fields in schema
 * order. Built by assignment, not by spread: V8 gives every frozen copy of a spread object a hidden
 * class of its own, and with one per record every read of a record's field (serializer, filter,
 * sort) went through V8's slowest property lookup (benchmarks/README.md).
 */
export function storedFields (model: ResourceModel, fields: Fields): Fields {
  const stored: Fields = {}
  for (const name of model.fields.keys()) if (Object.hasOwn(fields, name)) stored[name] = fields[name]
  // Keys the schema does not name (a direct store caller's) are kept, after the fields.
  for (const key of Object.keys(fields)) if (!model.fields.has(key)) stored[key] = fields[key]
  for (const field of model.fields.values()) if (field.name in stored) stored[field.name] = storedValue(field, stored[field.name])
  return stored
}

// Text no store keeps as sent: NUL (PostgreSQL refuses it in text) and lone surrogates (not
// Unicode; PostgreSQL would store U+FFFD). In Unicode mode a valid pair is one code point, so
// only a lone surrogate is in category Cs.
// eslint-disable-next-line no-control-regex -- NUL is what it looks for
const unstorable = /\u0000|\p{Cs}/u

interface Visit { readonly value: unknown, readonly key: string | undefined, readonly parent: Visit | undefined }

/**
 * The first string or member name inside `body` that no store keeps as sent, with its path. For
 * request bodies (validation.ts) and for JSON field values a store writes (sql/table.ts).
 * Iterative, with parent links rather than copied paths: a value nested as deep as the body limit
 * allows must neither overflow the stack nor build a path per level.
 */
export function findUnstorable (body: unknown): readonly [string[], string | number] | undefined {
  const pending: Visit[] = [{ value: body, key: undefined, parent: undefined }]
  for (let visit = pending.pop(); visit !== undefined; visit = pending.pop()) {
    const { value } = visit
    if (typeof value === 'string') {
      if (unstorable.test(value)) return [pathOf(visit), value]
    } else if (typeof value === 'number') {
      if (!Number.isFinite(value)) return [pathOf(visit), value]
    } else if (typeof value === 'object' && value !== null) {
      for (const [key, member] of Object.entries(value)) {
        if (unstorable.test(key)) return [[...pathOf(visit), key], key]
        pending.push({ value: member, key, parent: visit })
      }
    }
  }
  return undefined
}

function pathOf (visit: Visit): string[] {
  const path: string[] = []
  for (let at: Visit | undefined = visit; at?.key !== undefined; at = at.parent) path.unshift(at.key)
  return path
}
