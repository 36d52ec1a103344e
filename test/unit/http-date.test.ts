// Last-Modified text (lib/routes/shared.ts httpDate): each instant formatted once, whichever Date
// object carries it, and the cache stays bounded however many instants pass through it.
import t from 'tap'
import { httpDate, httpDatesKept } from '../../lib/routes/shared.js'

t.test('the same instant in another Date object reads the same text', async t => {
  const time = Date.UTC(2024, 4, 1, 12)
  t.equal(httpDate(new Date(time)), 'Wed, 01 May 2024 12:00:00 GMT')
  t.equal(httpDate(new Date(time)), 'Wed, 01 May 2024 12:00:00 GMT')
})

t.test('past the cache size every instant still formats right', async t => {
  const start = Date.UTC(2000, 0, 1)
  let wrong = 0
  for (let i = 0; i <= httpDatesKept * 2; i++) {
    const date = new Date(start + i * 1000)
    if (httpDate(date) !== date.toUTCString()) wrong++
  }
  t.equal(wrong, 0)
  t.equal(httpDate(new Date(start)), 'Sat, 01 Jan 2000 00:00:00 GMT', 'an instant dropped with the full cache is formatted again')
})
