// Last-Modified text (lib/http/dates.ts formatHttpDate): each instant formatted once, whichever Date
// object carries it, and the cache stays bounded however many instants pass through it.
import t from 'tap'
import { formatHttpDate, httpDatesKept } from '../../lib/http/dates.js'

t.test('the same instant in another Date object reads the same text', async t => {
  const time = Date.UTC(2024, 4, 1, 12)
  t.equal(formatHttpDate(new Date(time)), 'Wed, 01 May 2024 12:00:00 GMT')
  t.equal(formatHttpDate(new Date(time)), 'Wed, 01 May 2024 12:00:00 GMT')
})

t.test('past the cache size every instant still formats right', async t => {
  const start = Date.UTC(2000, 0, 1)
  let wrong = 0
  for (let i = 0; i <= httpDatesKept * 2; i++) {
    const date = new Date(start + i * 1000)
    if (formatHttpDate(date) !== date.toUTCString()) wrong++
  }
  t.equal(wrong, 0)
  t.equal(formatHttpDate(new Date(start)), 'Sat, 01 Jan 2000 00:00:00 GMT', 'an instant dropped with the full cache is formatted again')
})
