// The served OpenAPI document as tests read it: its shared parts (components.parameters,
// responses, headers; a Path Item's parameters) put back in each operation, as a reader that
// follows the $refs sees them. Schema $refs (components.schemas) stay.
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import { memoryStore } from '../../lib/index.js'
import { buildDemoAppOver, demoPluginOptions } from '../../demo/app.js'
import type { DemoConfig } from '../../demo/config.js'

type Json = Record<string, any>

const methods = ['get', 'head', 'post', 'put', 'patch', 'delete', 'options']

/** What a `#/components/<kind>/<name>` reference names; an object that is no reference, as it is. */
function resolved (document: Json, value: Json): Json {
  const ref = value.$ref
  if (typeof ref !== 'string' || ref.startsWith('#/components/schemas/')) return value
  const [kind, name] = ref.slice('#/components/'.length).split('/')
  const target = document.components?.[kind]?.[name]
  if (target === undefined) throw new Error(`${ref} does not resolve`)
  // OpenAPI 3.1 §4.8.23: a Reference Object's description overrides the component's.
  return { ...resolved(document, target), ...(value.description === undefined ? {} : { description: value.description }) }
}

function inlineResponse (document: Json, response: Json): Json {
  const inlined = resolved(document, response)
  if (inlined.headers === undefined) return inlined
  return { ...inlined, headers: Object.fromEntries(Object.entries(inlined.headers as Json).map(([name, header]) => [name, resolved(document, header)])) }
}

/** A copy of the document with each operation's parameters, responses and response headers in place. */
export function inlined (document: Json): Json {
  const copy: Json = structuredClone(document)
  for (const item of Object.values(copy.paths as Json)) {
    const shared = ((item.parameters ?? []) as Json[]).map(parameter => resolved(copy, parameter))
    delete item.parameters
    for (const method of methods) {
      const operation = item[method]
      if (operation === undefined) continue
      const own = ((operation.parameters ?? []) as Json[]).map(parameter => resolved(copy, parameter))
      // An operation's parameter overrides the Path Item's of the same name and location.
      const parameters = [...shared.filter(parameter => !own.some(other => other.in === parameter.in && other.name === parameter.name)), ...own]
      if (parameters.length > 0) operation.parameters = parameters
      operation.responses = Object.fromEntries(Object.entries(operation.responses as Json).map(([status, response]) => [status, inlineResponse(copy, response)]))
    }
  }
  return copy
}

/** Every `$ref` in the document, with where it stands. */
export function refsOf (value: unknown, at = '#'): Array<{ at: string, ref: string }> {
  if (Array.isArray(value)) return value.flatMap((item, index) => refsOf(item, `${at}/${index}`))
  if (value === null || typeof value !== 'object') return []
  return Object.entries(value).flatMap(([key, item]) => key === '$ref' && typeof item === 'string' ? [{ at, ref: item }] : refsOf(item, `${at}/${key}`))
}

/** The value a local reference (`#/a/b`) points at, or undefined. */
export function pointAt (document: Json, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined
  return ref.slice(2).split('/').map(part => part.replaceAll('~1', '/').replaceAll('~0', '~')).reduce<any>((at, part) => at?.[part], document)
}

/**
 * A copy of an inlined document with each status an operation can answer written out: a
 * `default` (openapi.detail 'compact') as one response per status its `x-statuses` lists, and on
 * a HEAD the problems its GET lists, without their bodies (a HEAD answers as its GET). A full
 * document is the same after as before.
 */
export function everyStatus (document: Json): Json {
  const copy: Json = structuredClone(document)
  for (const item of Object.values(copy.paths as Json)) {
    for (const method of methods) {
      const operation = item[method]
      const shared = operation?.responses.default
      if (shared === undefined) continue
      const { 'x-statuses': statuses, ...response } = shared
      for (const status of statuses as number[]) operation.responses[status] ??= response
      delete operation.responses.default
    }
    if (item.head === undefined) continue
    for (const [status, response] of Object.entries(item.get.responses as Json)) {
      const { content: _, ...bodiless } = response as Json
      if (Number(status) >= 400) item.head.responses[status] ??= bodiless
    }
  }
  return copy
}

/** The demo as it would be with the plugin's default document, `openapi.detail: 'full'` (it serves the compact one), on a memory store. */
export async function demoInFull (config: DemoConfig, serverOptions: FastifyServerOptions = {}): Promise<FastifyInstance> {
  const store = memoryStore()
  return buildDemoAppOver(config, store, serverOptions, { openapi: { ...demoPluginOptions(config, store).openapi, detail: 'full' } })
}
