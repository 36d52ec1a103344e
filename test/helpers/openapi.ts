// The served OpenAPI document as tests read it: its shared parts (components.parameters,
// responses, headers; a Path Item's parameters) put back in each operation, as a reader that
// follows the $refs sees them. Schema $refs (components.schemas) stay.

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
