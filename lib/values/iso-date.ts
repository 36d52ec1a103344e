// ISO dates (RFC 3339 §5.6, the JSON Schema `date` and `date-time` formats) as filters, simple
// filters and every store read them: the calendar check, written once.

/**
 * Midnight UTC of the given day. setUTCFullYear, unlike Date.UTC, keeps years 0–99 rather than
 * mapping them to 1900–1999; an impossible day or month rolls over into another month.
 */
export function utcDay (year: number, month: number, day: number): Date {
  const date = new Date(0)
  date.setUTCFullYear(year, month - 1, day)
  return date
}

/** The calendar day as a Date at midnight UTC, or null when the day does not exist (31 Feb rolled over). */
export function calendarDay (year: number, month: number, day: number): Date | null {
  const date = utcDay(year, month, day)
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day ? date : null
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
const DATETIME = /^(\d{4}-\d{2}-\d{2})T(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d+)?)?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/

/**
 * `YYYY-MM-DD` naming a real calendar day, from 0001 on: no store holds year 0 (PostgreSQL has
 * none, its docs, "History of Units"), and PostgreSQL cannot even compare it.
 * @example
 * isDate('2024-02-29') // true
 */
export function isDate (text: string): boolean {
  const match = DATE.exec(text)
  if (match === null) return false
  const [year, month, day] = match.slice(1).map(Number)
  return year !== 0 && calendarDay(year, month, day) !== null
}

/**
 * `YYYY-MM-DDThh:mm[:ss[.fff]](Z|±hh:mm)` with a real calendar day: a date-time as a filter writes it.
 * @example
 * isDateTime('2024-05-01T12:00Z') // true
 */
export function isDateTime (text: string): boolean {
  const match = DATETIME.exec(text)
  return match !== null && isDate(match[1])
}
