// Dates in HTTP headers, read and written once: Last-Modified as IMF-fixdate; If-Modified-Since and
// If-Unmodified-Since as an HTTP-date (RFC 9110 §5.6.7); the Date request header (spec "Request
// headers": Date, RFC 5322 date format) as an RFC 5322 date-time or an obsolete HTTP-date form.
import { keepBounded } from '../bounded.js'

const months = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec']
const days = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat']
const month = '(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)'
const day = '(Mon|Tue|Wed|Thu|Fri|Sat|Sun)'
// RFC 5322 §3.3 without comments: [ day-of-week "," ] day month year hour ":" minute [ ":" second ] zone
const rfc5322 = new RegExp(`^(?:${day} *, *)?(\\d{1,2}) +${month} +(\\d{4}) +(\\d{2}):(\\d{2})(?::(\\d{2}))? +([+-]\\d{4}|UT|GMT|[ECMP][SD]T)$`, 'i')
// RFC 9110 §5.6.7: IMF-fixdate, the one form an HTTP-date is sent in (a case-sensitive RFC 5322 date-time)…
const imfFixdate = new RegExp(`^${day}, (\\d{2}) ${month} (\\d{4}) (\\d{2}):(\\d{2}):(\\d{2}) GMT$`)
// …and the obsolete rfc850-date and asctime-date a recipient must still accept.
const rfc850 = new RegExp(`^(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-${month}-(\\d{2}) (\\d{2}):(\\d{2}):(\\d{2}) GMT$`)
const asctime = new RegExp(`^${day} ${month} ( \\d|\\d{2}) (\\d{2}):(\\d{2}):(\\d{2}) (\\d{4})$`)
const zones: Readonly<Record<string, number>> = { UT: 0, GMT: 0, EST: -5, EDT: -4, CST: -6, CDT: -5, MST: -7, MDT: -6, PST: -8, PDT: -7 }

interface Parts { weekday?: string, day: number, month: string, year: number, hour: number, minute: number, second: number, offsetMinutes: number }

function build (p: Parts): Date | null {
  const monthIndex = months.indexOf(p.month.toLowerCase())
  const local = Date.UTC(p.year, monthIndex, p.day, p.hour, p.minute, Math.min(p.second, 59))
  const calendar = new Date(local)
  // Date.UTC rolls 31 Feb over into March: such a day does not exist.
  if (calendar.getUTCDate() !== p.day || p.hour > 23 || p.minute > 59 || p.second > 60) return null
  // RFC 5322 §3.3: the day-of-week, when given, must be the one the date implies.
  if (p.weekday !== undefined && days[calendar.getUTCDay()] !== p.weekday.slice(0, 3).toLowerCase()) return null
  return new Date(local - p.offsetMinutes * 60000)
}

function offsetOf (zone: string): number | null {
  const named = zones[zone.toUpperCase()]
  if (named !== undefined) return named * 60
  const minutes = Number(zone.slice(3))
  if (minutes > 59) return null
  return (zone[0] === '-' ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + minutes)
}

/** The two obsolete HTTP-date forms, which both readings accept. */
function parseObsoleteDate (text: string): Date | null {
  let m = rfc850.exec(text)
  if (m !== null) {
    // RFC 9110 §5.6.7: a two-digit year more than 50 years ahead means the previous century.
    const thisYear = new Date().getUTCFullYear()
    let year = Math.floor(thisYear / 100) * 100 + Number(m[4])
    if (year > thisYear + 50) year -= 100
    return build({ weekday: m[1], day: Number(m[2]), month: m[3], year, hour: Number(m[5]), minute: Number(m[6]), second: Number(m[7]), offsetMinutes: 0 })
  }
  m = asctime.exec(text)
  if (m !== null) {
    return build({ weekday: m[1], day: Number(m[3]), month: m[2], year: Number(m[7]), hour: Number(m[4]), minute: Number(m[5]), second: Number(m[6]), offsetMinutes: 0 })
  }
  return null
}

/**
 * The instant an HTTP-date names (RFC 9110 §5.6.7: IMF-fixdate, rfc850-date or asctime-date, all
 * case-sensitive, each naming a real day and its weekday), or null for anything else.
 * @example
 * parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT') // 1994-11-06T08:49:37.000Z
 */
export function parseHttpDate (text: string): Date | null {
  const m = imfFixdate.exec(text)
  if (m === null) return parseObsoleteDate(text)
  return build({ weekday: m[1], day: Number(m[2]), month: m[3], year: Number(m[4]), hour: Number(m[5]), minute: Number(m[6]), second: Number(m[7]), offsetMinutes: 0 })
}

/**
 * The instant a request's Date header names: an RFC 5322 date-time (any case, any zone, seconds
 * optional; IMF-fixdate is one) or an obsolete HTTP-date form (RFC 9110 §5.6.7); null for anything else.
 * @example
 * parseDateHeader('6 Nov 1994 09:49 +0100') // 1994-11-06T08:49:00.000Z
 */
export function parseDateHeader (text: string): Date | null {
  const m = rfc5322.exec(text)
  if (m === null) return parseObsoleteDate(text)
  const offsetMinutes = offsetOf(m[8])
  if (offsetMinutes === null) return null
  return build({ weekday: m[1], day: Number(m[2]), month: m[3], year: Number(m[4]), hour: Number(m[5]), minute: Number(m[6]), second: Number(m[7] ?? 0), offsetMinutes })
}

// Formatting a date costs more than the rest of writeHeaders: each instant is formatted once. Keyed
// by the time, not the Date (a database read makes a new Date each time, and a WeakMap entry per
// read costs the garbage collector more than the formatting); emptied when full, which keeps it
// bounded whatever the times.
const httpDates = new Map<number, string>()
export const httpDatesKept = 4096

/**
 * The IMF-fixdate of an instant (RFC 9110 §5.6.7), as Last-Modified sends it.
 * @example
 * formatHttpDate(new Date(Date.UTC(2024, 4, 1, 12))) // 'Wed, 01 May 2024 12:00:00 GMT'
 */
export function formatHttpDate (date: Date): string {
  const time = date.getTime()
  let text = httpDates.get(time)
  if (text === undefined) text = keepBounded(httpDates, httpDatesKept, time, date.toUTCString())
  return text
}
