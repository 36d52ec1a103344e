// The compact document (`openapi.detail: 'compact'`, docs/openapi.md "The document's size"): the
// problems every route can answer (routes/http-prose.ts everyRouteProblems: 401, 403, 405 …) are
// one `default` response per operation instead of one response each, which lists them in
// `x-statuses` and says in its description what each means and which headers it carries. What an
// operation answers for its own reasons (400, 404, 409, 412 …) and every success stay as they are;
// so does a shared status the operation words its own way (the batch's 403), beside the default.
// A HEAD keeps its successes and the default: its GET, beside it, documents its other problems.
// Runs before openapi/components.ts, which shares each default as it shares the other responses.
import { problemDescription } from '../routes/http-prose.js'

type Json = Record<string, unknown>
// A problem response always has headers (Request-Id, routes/http-prose.ts problems), and a body but on a HEAD.
interface Response extends Json { description: string, headers: Record<string, Json>, content?: Record<string, Json> }
interface Operation { responses: Record<string, Json> }
interface PathsObject { paths: Record<string, Record<string, Operation>> }

/** `401`, `401 and 403`, `401, 403 and 405`. */
const listed = (items: ReadonlyArray<number | string>) => items.length === 1 ? String(items[0]) : `${items.slice(0, -1).join(', ')} and ${String(items[items.length - 1])}`

/** Where a header or media type goes among the default's statuses: on each, on each but a few, or on those. */
function where (on: readonly number[], statuses: readonly number[]): string {
  if (on.length === statuses.length) return 'on each'
  const others = statuses.filter(status => !on.includes(status))
  return on.length > others.length ? `on each but ${listed(others)}` : `on ${listed(on)}`
}

/**
 * One Header Object for a header the statuses send: theirs when they agree, else each status's
 * description and any of their schemas (a 429's Retry-After as an HTTP date, a 503's in seconds).
 */
function mergedHeader (sent: ReadonlyArray<[number, Json]>): Json {
  const forms = [...new Map(sent.map(([, header]) => [JSON.stringify(header), header])).values()]
  if (forms.length === 1) return forms[0]
  return {
    description: sent.map(([status, header]) => `On ${status}: ${String(header.description)}`).join(' '),
    schema: { anyOf: forms.map(header => header.schema) }
  }
}

/** The default response standing for `statuses`, from the operation's responses to them. */
function sharedResponse (operation: Operation, statuses: readonly number[], head: boolean): Response {
  const headers = new Map<string, Array<[number, Json]>>()
  const content: Record<string, Json> = {}
  const types = new Map<string, number[]>()
  for (const status of statuses) {
    const response = operation.responses[status] as Response
    for (const [name, header] of Object.entries(response.headers)) headers.set(name, [...headers.get(name) ?? [], [status, header]])
    Object.assign(content, response.content)
    const own = Object.keys(response.content ?? {}).join(' and ')
    types.set(own, [...types.get(own) ?? [], status])
  }
  // The headers that go on the same statuses, said together: `RateLimit-Policy and RateLimit on each but 408 and 431`.
  const byStatuses = new Map<string, string[]>()
  for (const [name, sent] of headers) {
    const on = where(sent.map(([status]) => status), statuses)
    byStatuses.set(on, [...byStatuses.get(on) ?? [], name])
  }
  const headerProse = [...byStatuses].map(([on, names]) => `${listed(names)} ${on}`).join('; ')
  const bodies = [...types].map(([type, on]) => `${type} ${where(on, statuses)}`).join('; ')
  const intro = head
    ? 'A HEAD answers the problems of its GET without a body: those the GET lists by status, and these, which any operation may answer whatever it does (x-statuses lists them):'
    : 'The problems any operation may answer whatever it does (x-statuses lists them); the problems of this operation\'s own are listed by status beside this response:'
  return {
    description: [
      intro,
      statuses.map(status => `- ${status} ${problemDescription(status)}`).join('\n'),
      `Headers: ${headerProse}.${head ? '' : ` Bodies: ${bodies}.`}`
    ].join('\n\n'),
    headers: Object.fromEntries([...headers].map(([name, sent]) => [name, mergedHeader(sent)])),
    ...head ? {} : { content },
    'x-statuses': statuses
  }
}

/** Each operation's responses to `shared` (the statuses every route can answer) as one default (see the module header). */
export function compactResponses<T extends PathsObject> (openapi: T, shared: readonly number[]): T {
  for (const item of Object.values(openapi.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      const statuses = shared.filter(status => operation.responses[status] !== undefined)
      const head = method === 'head'
      const responses: Record<string, Json> = {}
      for (const [status, response] of Object.entries(operation.responses) as Array<[string, Response]>) {
        const code = Number(status)
        // A problem the default stands for, in the words it gives; or any on a HEAD, whose GET lists them.
        const covered = head || (statuses.includes(code) && response.description === problemDescription(code))
        if (code < 400 || !covered) responses[status] = response
      }
      responses.default = sharedResponse(operation, statuses, head)
      operation.responses = responses
    }
  }
  return openapi
}
