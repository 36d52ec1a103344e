// Query-parsing micro-benchmark (spec "Advanced filtering (`filter`)"): filter text → checked AST for
// expressions of growing size, and the whole per-request parse of a LIST query string
// (parseListQuery, whose filter cache makes a repeated filter cost a Map lookup).
// Usage: node dist/benchmarks/micro/filter-parse.js [--quick]; prints a table, then one JSON line.
import { fileURLToPath, pathToFileURL } from 'node:url'
import { memoryStore } from '../../lib/index.js'
import { buildRegistry } from '../../lib/registry/index.js'
import { parseFilter } from '../../lib/query/filter/parser.js'
import { checkFilter } from '../../lib/query/filter/check.js'
import { parseListQuery } from '../../lib/query/list-query.js'
import { createCursorCodec } from '../../lib/paging/cursor.js'
import { demoResources } from '../../demo/schemas/index.js'
import { CURSOR_SECRET } from '../seed.js'
import { caseArgument, inChild, isQuick, time } from './child.js'
import type { Timing } from './child.js'

const filters = {
  small: 'year ge 2000',
  medium: "year ge 2000 and (rating gt 3.5 or available eq true) and not (title eq 'x')",
  large: "contains(tolower(title), 'garden') and author/country in ('NZ', 'AU', 'GB') and year ge 1950 and year le 2000 or rating eq null and startswith(title, 'The')"
}

const queries = {
  'list default': {},
  'list filter+sort+fields': { filter: 'year ge 2000', sort: '-rating', fields: 'title,rating,year' }
}

const ids = [...Object.keys(filters).map(name => `parse+check ${name}`), ...Object.keys(queries).map(name => `parseListQuery ${name}`)]

export interface FilterParseResult { readonly cases: ReadonlyArray<Timing & { readonly name: string }> }

async function measure (id: string, quick: boolean): Promise<Timing> {
  const [, books] = buildRegistry(demoResources(memoryStore()))
  const [kind, ...rest] = id.split(' ')
  const name = rest.join(' ')
  if (kind === 'parse+check') {
    const text = filters[name as keyof typeof filters]
    return await time(id, () => checkFilter(parseFilter(text), books), quick)
  }
  const raw = queries[name as keyof typeof queries]
  const context = { cursor: createCursorCodec({ secrets: [CURSOR_SECRET] }), defaultPaging: 'token' as const }
  return await time(id, () => parseListQuery(books, raw, context, '/v1/books'), quick)
}

function main () {
  const quick = isQuick()
  const cases = ids.map(name => {
    const timing = inChild<Timing>(fileURLToPath(import.meta.url), name, quick)
    process.stdout.write(`filter-parse  ${name.padEnd(40)} ${timing.opsPerSec.toFixed(0).padStart(9)} ops/s  ±${timing.rme.toFixed(1)}%\n`)
    return { name, ...timing }
  })
  process.stdout.write(JSON.stringify({ cases } satisfies FilterParseResult) + '\n')
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const id = caseArgument()
  if (id === undefined) main()
  else process.stdout.write(JSON.stringify(await measure(id, isQuick())))
}
