// Documentation of each problem `type` (issue 2, point 4): `{prefix}/problems/{slug}` answers a
// short page naming the code, its status and when it is raised; `{prefix}/problems` lists them.
import type { FastifyInstance, FastifyReply } from 'fastify'
import { NotFoundError, errorTable } from './errors.js'
import { problemTypeRouteSchema, problemTypesRouteSchema } from './routes/route-schema.js'
import type { SchemaOptions } from './routes/route-schema.js'

const escape = (text: string) => text.replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`)

// HTML, not JSON: the Accept check must weigh text/html for these routes (http/negotiation.ts).
const config = { public: true, produces: ['text/html'] }

/** `allow` records the methods of each page path, so other methods answer 405 like everywhere else. */
export function registerProblemPages (app: FastifyInstance, allow: (pattern: string, methods: readonly string[]) => void, schemaOptions: SchemaOptions) {
  const base = `${app.prefix}/problems`
  const pages = new Map<string, string>()
  const items: string[] = []
  for (const { code, description, slug, boot } of errorTable.values()) {
    if (boot) continue
    pages.set(slug, page(code, `<h1>${code}</h1><p>${escape(description)}</p><p><a href="${base}/">All problem types</a></p>`))
    items.push(`<li id="${slug}"><a href="${base}/${slug}"><code>${code}</code></a>: ${escape(description)}</li>`)
  }
  const index = page('Problem types', `<h1>Problem types</h1><ul>${items.join('')}</ul>`)
  function listProblemTypes (_request: unknown, reply: FastifyReply) {
    return reply.type('text/html; charset=utf-8').send(index)
  }
  // Both spellings: the type URLs end in a slug, and people trim it off by hand.
  app.get('/problems', { config, schema: problemTypesRouteSchema(schemaOptions) }, listProblemTypes)
  app.get('/problems/', { config, schema: { hide: true } }, listProblemTypes) // an alias, documented once
  app.get('/problems/:slug', { config, schema: problemTypeRouteSchema(schemaOptions) }, function describeProblemType (request, reply) {
    const html = pages.get((request.params as { slug: string }).slug)
    if (html === undefined) throw new NotFoundError(request.url.split('?', 1)[0])
    return reply.type('text/html; charset=utf-8').send(html)
  })
  allow('/problems', ['GET', 'HEAD'])
  allow('/problems/:slug', ['GET', 'HEAD'])
}

function page (title: string, body: string) {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title></head><body>${body}</body></html>`
}
