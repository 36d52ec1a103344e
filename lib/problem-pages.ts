// Documentation of each problem `type` (spec "Response envelope": the error object's `type` is the
// URL of the error documentation): `{prefix}/problems/{slug}` answers a short page naming the
// code, its status and when it is raised; `{prefix}/problems` lists them.
import type { FastifyInstance, FastifyReply, FastifySchema, RouteHandlerMethod } from 'fastify'
import { pageSpec, registerRoute, routerSettings } from './routes/table.js'
import { NotFoundError, errorTable } from './errors.js'
import { routePrefix } from './options.js'
import { problemTypeRouteSchema, problemTypesRouteSchema } from './openapi/docs-routes.js'
import type { SchemaOptions } from './routes/route-schema.js'

const escape = (text: string) => text.replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`)

// HTML, not JSON: the Accept check must weigh text/html for these routes (http/negotiation.ts).
const produces = ['text/html']
const page = (spec: { path: string, schema: FastifySchema, handler: RouteHandlerMethod }) =>
  pageSpec({ ...spec, allow: ['GET', 'HEAD'], operation: 'problem-types', responseTypes: produces })

/** The pages, each with its route spec, so other methods answer 405 like everywhere else. */
export function registerProblemPages (app: FastifyInstance, schemaOptions: SchemaOptions) {
  const base = `${routePrefix(app)}/problems`
  const pages = new Map<string, string>()
  const items: string[] = []
  for (const { code, description, slug, boot } of errorTable.values()) {
    if (boot) continue
    pages.set(slug, html(code, `<h1>${code}</h1><p>${escape(description)}</p><p><a href="${base}/">All problem types</a></p>`))
    items.push(`<li id="${slug}"><a href="${base}/${slug}"><code>${code}</code></a>: ${escape(description)}</li>`)
  }
  const index = html('Problem types', `<h1>Problem types</h1><ul>${items.join('')}</ul>`)
  function listProblemTypes (_request: unknown, reply: FastifyReply) {
    return reply.type('text/html; charset=utf-8').send(index)
  }
  // Both spellings: the type URLs end in a slug, and people trim it off by hand.
  registerRoute(app, page({ path: '/problems', schema: problemTypesRouteSchema(schemaOptions), handler: listProblemTypes }))
  // An alias, documented once; a router that ignores trailing slashes serves it already.
  if (routerSettings(app).ignoreTrailingSlash !== true) registerRoute(app, page({ path: '/problems/', schema: { hide: true }, handler: listProblemTypes }))
  registerRoute(app, page({
    path: '/problems/:slug',
    schema: problemTypeRouteSchema(schemaOptions),
    handler: function describeProblemType (request, reply) {
      const text = pages.get((request.params as { slug: string }).slug)
      if (text === undefined) throw new NotFoundError(request.url.split('?', 1)[0])
      return reply.type('text/html; charset=utf-8').send(text)
    }
  }))
}

function html (title: string, body: string) {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title></head><body>${body}</body></html>`
}
