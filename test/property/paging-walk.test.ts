// Property (spec "Paging" → token-based paging, "Paging stability"): walking token
// pages with random page sizes while books are created and deleted between pages, forward via `next`
// and backward via `prev`, visits every book that existed throughout exactly once, in order; also
// with control characters in simple-filter values and a sort on a date-time in several offsets.
import t from 'tap'
import fc from 'fast-check'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { defineResource } from '../../lib/index.js'
import type { Store } from '../../lib/index.js'
import { Author } from '../../demo/schemas/authors.js'
import { Book } from '../../demo/schemas/books.js'
import { buildApp, create } from '../helpers/app.js'
import { hrefOf, withParam } from '../helpers/list-app.js'
import type { Item } from '../helpers/list-app.js'

// The demo's books plus a date-time.
const TimedBook = Type.Object({ ...Book.properties, at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]) }, { additionalProperties: false })

function resources (store: Store) {
  return [
    defineResource({ name: 'authors', singular: 'author', schema: Author, store }),
    defineResource({ name: 'books', singular: 'book', schema: TimedBook, store, relations: { author: { kind: 'one', resource: 'authors', field: 'authorId' } } })
  ]
}

const sorts = ['', 'title', '-year', 'rating,-title', '-available,year', '-id', 'year,-rating', 'at', '-at,title']
/** Query string → the books it selects. */
const filters: Record<string, (book: Item) => boolean> = {
  '': () => true,
  [`filter=${encodeURIComponent('available eq true')}`]: book => book.available === true,
  [`filter=${encodeURIComponent('year ne null')}`]: book => book.year !== null,
  [`filter=${encodeURIComponent("year ge 1961 or startswith(title, 'B')")}`]: book => (typeof book.year === 'number' && book.year >= 1961) || (book.title as string).startsWith('B'),
  'title=A%02B&title=B%01b&title=C': book => ['A\u0002B', 'B\u0001b', 'C'].includes(book.title as string),
  [`filter=${encodeURIComponent('at ge 2024-01-01T08:30:00Z')}&title=A&title=A%02B`]: book => typeof book.at === 'string' && Date.parse(book.at) >= Date.parse('2024-01-01T08:30:00Z') && ['A', 'A\u0002B'].includes(book.title as string)
}

const bookArb = fc.record({
  // No 'A\u0002B' among the stored titles; the queries above carry %02, so a link that split the
  // value would reach the 'A' and 'B' books.
  title: fc.constantFrom('A', 'B', 'Bb', 'C', 'B\u0001b'),
  year: fc.constantFrom(1957, 1961, 1969, null),
  rating: fc.constantFrom(1, 2.5, null),
  available: fc.boolean(),
  // As text these order otherwise than as instants.
  at: fc.constantFrom('2024-01-01T10:00:00+02:00', '2024-01-01T09:00:00Z', '2024-01-01T08:30:00Z', '2024-01-01T03:45:00-05:00', null)
})

/** Between two page reads: create some books and delete some (by position among the live ones). */
const changesArb = fc.array(fc.oneof(
  bookArb.map(book => ({ create: book })),
  fc.nat().map(index => ({ delete: index }))
), { maxLength: 4 })

const stepArb = fc.record({ pageSize: fc.integer({ min: 1, max: 5 }), changes: changesArb })
type Changes = Array<{ create: object } | { delete: number }>
interface Step { pageSize: number, changes: Changes }

/** The order the sort asks for: null lowest, date-times by instant, then the id (unless sorted on) as tie-breaker in the last key's direction. */
function comparator (sort: string) {
  const keys = sort === '' ? [] : sort.split(',').map(key => key.startsWith('-') ? { field: key.slice(1), sign: -1 } : { field: key, sign: 1 })
  if (!keys.some(key => key.field === 'id')) keys.push({ field: 'id', sign: keys.at(-1)?.sign ?? 1 })
  const valueOf = (item: Item, field: string) => (field === 'at' && typeof item.at === 'string' ? Date.parse(item.at) : item[field]) as string | number | boolean | null
  return (a: Item, b: Item): number => {
    for (const { field, sign } of keys) {
      const x = valueOf(a, field)
      const y = valueOf(b, field)
      if (x === y) continue
      if (x === null) return -sign
      if (y === null) return sign
      return (x < y ? -1 : 1) * sign
    }
    return 0
  }
}

class Library {
  readonly live = new Map<string, Item>()
  readonly deleted = new Set<string>()
  constructor (readonly app: FastifyInstance, readonly authorId: string) {}

  async add (book: object) {
    const created = await create(this.app, 'books', { ...book, authorId: this.authorId })
    this.live.set(created.id, created)
  }

  async apply (changes: Changes) {
    for (const change of changes) {
      if ('create' in change) await this.add(change.create)
      else if (this.live.size > 0) {
        const id = [...this.live.keys()][change.delete % this.live.size]
        const res = await this.app.inject({ method: 'DELETE', url: `/v1/books/${id}` })
        if (res.statusCode !== 204) throw new Error(`delete ${id}: ${res.statusCode}`)
        this.live.delete(id)
        this.deleted.add(id)
      }
    }
  }

  async read (url: string): Promise<Record<string, any>> {
    const res = await this.app.inject({ url })
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`)
    return res.json()
  }
}

/** Follows `rel` page by page, changing the page size and the data between reads; returns the items in page order. */
async function walk (library: Library, start: string, rel: 'next' | 'prev', steps: Step[]) {
  const pages: Item[][] = []
  let href: string | undefined = start
  for (let i = 0; href !== undefined; i++) {
    if (i > 200) throw new Error('the walk does not end')
    const body = await library.read(href)
    pages.push(body.data.books)
    const step = steps[i % steps.length]
    await library.apply(step.changes)
    const following = hrefOf(body, rel)
    href = following === undefined ? undefined : withParam(following, 'pageSize', String(step.pageSize))
  }
  return pages
}

function checkVisits (items: Item[], expected: Set<string>, compare: (a: Item, b: Item) => number, direction: string) {
  const ids = items.map(item => item.id)
  if (new Set(ids).size !== ids.length) throw new Error(`${direction}: an item was visited twice: ${ids.join(',')}`)
  for (const id of expected) if (!ids.includes(id)) throw new Error(`${direction}: ${id}, present throughout, was skipped`)
  for (let i = 1; i < items.length; i++) {
    if (compare(items[i - 1], items[i]) >= 0) throw new Error(`${direction}: out of order at ${i}`)
  }
}

t.test('token walks forward and backward never duplicate or skip an item present throughout', async t => {
  let runs = 0
  let pagesRead = 0
  let longWalks = 0
  await fc.assert(fc.asyncProperty(
    fc.constantFrom(...sorts), fc.constantFrom(...Object.keys(filters)),
    fc.array(bookArb, { minLength: 8, maxLength: 30 }),
    fc.integer({ min: 1, max: 5 }), fc.array(stepArb, { minLength: 1, maxLength: 8 }),
    async (sort, filter, initial, firstSize, steps) => {
      const app = await buildApp(t, { resources })
      try {
        const author = await create(app, 'authors', { name: 'Walker' })
        const library = new Library(app, author.id)
        for (const book of initial) await library.add(book)
        const compare = comparator(sort)
        const matches = filters[filter]
        const query = [sort === '' ? '' : `sort=${encodeURIComponent(sort)}`, filter].filter(Boolean).join('&')

        // Forward from the first page.
        const before = new Set([...library.live.values()].filter(matches).map(book => book.id))
        const forward = await walk(library, `/v1/books?${query}&pageSize=${firstSize}`, 'next', steps)
        const throughout = new Set([...before].filter(id => !library.deleted.has(id)))
        checkVisits(forward.flat(), throughout, compare, 'forward')

        // Backward from the last page, read with the largest page size so nothing lies beyond it.
        const startHref = await lastPage(library, query)
        const backStart = new Set([...library.live.values()].filter(matches).map(book => book.id))
        library.deleted.clear()
        const backward = await walk(library, startHref, 'prev', steps)
        const stayed = new Set([...backStart].filter(id => !library.deleted.has(id)))
        checkVisits(backward.reverse().flat(), stayed, compare, 'backward')
        runs++
        pagesRead += forward.length + backward.length
        if (forward.length >= 3 && backward.length >= 3) longWalks++
      } finally {
        await app.close()
      }
    }), { seed: 42, numRuns: 40 })
  t.equal(runs, 40)
  // Not vacuous: most runs page several times in both directions.
  t.ok(longWalks >= 20, `${longWalks} runs walked 3+ pages each way`)
  t.ok(pagesRead >= 200, `${pagesRead} pages read`)
})

/** The `self` of the last page of an undisturbed forward walk, with the largest page size. */
async function lastPage (library: Library, query: string): Promise<string> {
  let href = `/v1/books?${query}&pageSize=3`
  for (;;) {
    const body = await library.read(href)
    const next = hrefOf(body, 'next')
    if (next === undefined) return withParam(hrefOf(body, 'self') as string, 'pageSize', '100')
    href = next
  }
}
