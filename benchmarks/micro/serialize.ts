// Serialization micro-benchmark: the plugin's compiled collection serializer
// (Fastify's fast-json-stringify of the derived BookList schema) against a hand-written
// fast-json-stringify schema for the same envelope and against JSON.stringify, for pages of 20
// and 100 books. One child process per case, so no case's JIT state leaks into another's; the
// median of three rounds.
// Usage: node dist/benchmarks/micro/serialize.js [--quick]; prints a table, then one JSON line.
import { fileURLToPath, pathToFileURL } from 'node:url'
import fastJson from 'fast-json-stringify'
import { benchConfig, buildPluginApp, seededMemoryStore } from '../server.js'
import { bookListSchema } from '../envelope-schemas.js'
import { caseArgument, inChild, isQuick, time } from './child.js'

export const contestants = ['plugin', 'hand-written', 'JSON.stringify', 'plugin-without-relation'] as const
type Contestant = typeof contestants[number]
const sizes = [20, 100] as const

export interface SerializeCase { readonly contestant: Contestant, readonly items: number, readonly opsPerSec: number, readonly rme: number }
export interface SerializeResult {
  readonly cases: readonly SerializeCase[]
  /** Plugin ops/s ÷ the other's; ≥ 0.95 against the hand-written schema and > 1 against JSON.stringify are the targets. */
  readonly ratios: ReadonlyArray<{ readonly items: number, readonly vsHandWritten: number, readonly vsJsonStringify: number }>
}

type Serialize = (payload: unknown) => string
type Schema = Parameters<typeof fastJson>[0]

/**
 * The page body the plugin builds for `pageSize`, the serializer Fastify compiled for the route, and
 * a variant compiled from the same schemas with the relation members (`author`) left out of Book.
 */
async function capture (items: number): Promise<{ payload: unknown, serializers: Record<Contestant, Serialize> }> {
  const app = await buildPluginApp(benchConfig({}), await seededMemoryStore())
  let payload: unknown
  let plugin: Serialize | undefined
  let schemas: Record<string, Schema> = {}
  app.addHook('preSerialization', async function grab (request, reply, body) {
    payload = body
    plugin = reply.getSerializationFunction('200') as Serialize
    schemas = request.server.getSchemas() as unknown as Record<string, Schema>
    return body
  })
  const response = await app.inject({ url: `/v1/books?pageSize=${items}`, headers: { authorization: 'Bearer dev-token' } })
  await app.close()
  if (response.statusCode !== 200 || plugin === undefined) throw new Error(`LIST answered ${response.statusCode}: ${response.body}`)
  const { author: _author, ...bookProperties } = (schemas.Book as { properties: Record<string, unknown> }).properties
  const { $id: _listId, ...list } = schemas.BookList as unknown as Record<string, unknown>
  const withoutRelation = fastJson(list as unknown as Schema, { schema: { ...schemas, Book: { ...schemas.Book, properties: bookProperties } as unknown as Schema } })
  return {
    payload,
    serializers: {
      plugin,
      'hand-written': fastJson(bookListSchema as Schema),
      'JSON.stringify': JSON.stringify,
      'plugin-without-relation': withoutRelation
    }
  }
}

async function measure (contestant: Contestant, items: number, quick: boolean): Promise<SerializeCase> {
  const { payload, serializers } = await capture(items)
  const expected = JSON.stringify(payload)
  for (const [name, serialize] of Object.entries(serializers)) {
    if (serialize(payload) !== expected) throw new Error(`${name} does not produce the same bytes as JSON.stringify`)
  }
  const serialize = serializers[contestant]
  return { contestant, items, ...await time(contestant, () => serialize(payload), quick) }
}

function main () {
  const quick = isQuick()
  // Contestants take turns, round after round, and each keeps its median: other processes on the
  // machine then slow every contestant alike instead of whichever ran at a bad moment.
  const rounds = quick ? 1 : 3
  const runs = new Map<string, SerializeCase[]>()
  for (let round = 0; round < rounds; round++) {
    for (const items of sizes) {
      for (const contestant of contestants) {
        const id = `${contestant}:${items}`
        runs.set(id, [...runs.get(id) ?? [], inChild<SerializeCase>(fileURLToPath(import.meta.url), id, quick)])
      }
    }
  }
  const results = [...runs.values()].map(list => [...list].sort((a, b) => a.opsPerSec - b.opsPerSec)[list.length >> 1])
  for (const one of results) {
    process.stdout.write(`serialize ${String(one.items).padStart(3)} items  ${one.contestant.padEnd(24)} ${one.opsPerSec.toFixed(0).padStart(9)} ops/s  ±${one.rme.toFixed(1)}%\n`)
  }
  const ops = (contestant: Contestant, items: number) => (results.find(r => r.contestant === contestant && r.items === items) as SerializeCase).opsPerSec
  const ratios = sizes.map(items => ({
    items,
    vsHandWritten: ops('plugin', items) / ops('hand-written', items),
    vsJsonStringify: ops('plugin', items) / ops('JSON.stringify', items)
  }))
  for (const r of ratios) process.stdout.write(`serialize ${String(r.items).padStart(3)} items  plugin ÷ hand-written ${r.vsHandWritten.toFixed(2)}, plugin ÷ JSON.stringify ${r.vsJsonStringify.toFixed(2)}\n`)
  process.stdout.write(JSON.stringify({ cases: results, ratios } satisfies SerializeResult) + '\n')
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const id = caseArgument()
  if (id === undefined) main()
  else process.stdout.write(JSON.stringify(await measure(id.split(':')[0] as Contestant, Number(id.split(':')[1]), isQuick())))
}
